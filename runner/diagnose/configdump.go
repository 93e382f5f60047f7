package diagnose

import (
	"github.com/igwlab/igwlab/runner/stats"
	"github.com/igwlab/igwlab/stacks"
)

// inForce reads the rotation and caps from a /config_dump: the listener whose connection
// manager has the gateway's stat prefix (any outbound_ one when prefix is empty).
func inForce(dump []byte, prefix string) (*InForce, error) {
	k, err := stats.KnobsInForce(dump, prefix)
	if err != nil {
		return nil, err
	}
	f := &InForce{Pods: 1}
	for _, kv := range []struct {
		path string
		dst  any
	}{
		{"hcm.http2_protocol_options.max_concurrent_streams", &f.MaxConcurrentStreams},
		{"hcm.common_http_protocol_options.max_requests_per_connection", &f.MaxRequestsPerConnection},
		{"hcm.common_http_protocol_options.max_connection_duration", &f.MaxConnectionDuration},
		{"hcm.common_http_protocol_options.max_stream_duration", &f.MaxStreamDuration},
		{"listener.connection_balance_config.exact_balance", &f.ExactBalance},
	} {
		spec, _ := stacks.Lookup(kv.path)
		if err := spec.Load(&k, kv.dst); err != nil {
			return nil, err
		}
	}
	return f, nil
}
