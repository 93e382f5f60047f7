package model

import "time"

// DNSMinResolutionInterval is how often, at most, a gRPC client's DNS resolver resolves a name
// again: grpc-go's dnsResolver.watcher waits MinResolutionInterval (30 s) after each
// resolution before it answers the next ResolveNow (internal/resolver/dns/dns_resolver.go).
const DNSMinResolutionInterval = 30 * time.Second

// Resolution is one ClientConn's name, resolved at the start and again on request. grpc-go
// asks for it on every connection loss, a GOAWAY included: addrConn.createTransport's onClose
// calls cc.resolveNow ("Refresh the name resolver on any connection loss", clientconn.go), and
// http2Client.handleGoAway calls onClose as the GOAWAY arrives (internal/transport/
// http2_client.go). Nothing else re-resolves it: a round_robin client whose connections never
// close never learns of pods added after it started, however long it runs (bojand/ghz#434).
// Both targets keep their clients' names by this rule: the simulated client in virtual time,
// the local target's grpc-go client through its resolver's ResolveNow.
type Resolution struct {
	last    time.Time
	pending bool
}

// Resolved records a resolution at now (the first is the ClientConn's start).
func (r *Resolution) Resolved(now time.Time) {
	r.last, r.pending = now, false
}

// Request is a ResolveNow at now: it returns when the resolver answers, and false when an
// answer is already due (requests in between are one, as the resolver's channel of one is).
func (r *Resolution) Request(now time.Time) (time.Time, bool) {
	if r.pending {
		return time.Time{}, false
	}
	r.pending = true
	at := r.last.Add(DNSMinResolutionInterval)
	if now.After(at) {
		at = now
	}
	return at, true
}
