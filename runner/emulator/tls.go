package emulator

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"slices"
	"time"
)

// gatewayTLS is the gateway's TLS listener: a certificate made at start (self-signed, so
// clients skip verification), ALPN h2, and the cost of a server handshake on this machine,
// measured at start and booked on the worker for every new connection: with TLS, every
// rotation costs the hot thread a handshake.
type gatewayTLS struct {
	cfg  *tls.Config
	cost time.Duration
}

func newGatewayTLS() (*gatewayTLS, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:   pkix.Name{CommonName: "istio-ingressgateway.istio-ingress.svc.cluster.local"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(30 * 24 * time.Hour),
		DNSNames:    []string{"localhost", "istio-ingressgateway.istio-ingress.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	g := &gatewayTLS{cfg: &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		NextProtos:   []string{"h2"}, MinVersion: tls.VersionTLS12,
	}}
	g.cost = g.measure()
	return g, nil
}

// measure times full server handshakes over in-memory pipes and returns the median.
func (g *gatewayTLS) measure() time.Duration {
	var samples []time.Duration
	client := &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}} //nolint:gosec // our own self-signed certificate
	for i := 0; i < 15; i++ {
		a, b := net.Pipe()
		done := make(chan struct{})
		go func() {
			_ = tls.Client(a, client).Handshake()
			close(done)
		}()
		t0 := time.Now()
		_ = tls.Server(b, g.cfg).Handshake()
		samples = append(samples, time.Since(t0))
		<-done
		a.Close()
		b.Close()
	}
	slices.Sort(samples)
	return samples[len(samples)/2]
}
