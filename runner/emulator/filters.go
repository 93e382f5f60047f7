package emulator

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/igwlab/igwlab/stacks"
)

// jwtAuthn is the JWT filter of scenario 11: RS256 tokens signed by a key generated when the
// pool starts, verified for real on every request. Its cost on the worker's clock is the
// median time this machine takes to verify one token, measured at start.
type jwtAuthn struct {
	key  *rsa.PrivateKey
	kid  string
	cost time.Duration
}

func newJWTAuthn() (*jwtAuthn, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	j := &jwtAuthn{key: key, kid: "igwlab-local"}
	tok := j.Token("calibration", time.Hour)
	cfg := &stacks.JWT{Mode: "permissive", Issuer: "calibration"}
	samples := make([]time.Duration, 0, 101)
	for i := 0; i < 101; i++ {
		t0 := time.Now()
		j.check("Bearer "+tok, cfg)
		samples = append(samples, time.Since(t0))
	}
	slices.Sort(samples)
	j.cost = samples[len(samples)/2]
	return j, nil
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// Token mints a token for issuer, valid for ttl.
func (j *jwtAuthn) Token(issuer string, ttl time.Duration) string {
	hdr, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": j.kid})
	now := time.Now()
	claims, _ := json.Marshal(map[string]any{"iss": issuer, "sub": "igwlab-client", "iat": now.Unix(), "exp": now.Add(ttl).Unix()})
	signing := b64(hdr) + "." + b64(claims)
	sum := sha256.Sum256([]byte(signing))
	sig, _ := rsa.SignPKCS1v15(rand.Reader, j.key, crypto.SHA256, sum[:])
	return signing + "." + b64(sig)
}

// JWKS returns the public key set, as a RequestAuthentication's jwks field takes it.
func (j *jwtAuthn) JWKS() string {
	pub := j.key.PublicKey
	e := big.NewInt(int64(pub.E)).Bytes()
	doc, _ := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "alg": "RS256", "use": "sig", "kid": j.kid, "n": b64(pub.N.Bytes()), "e": b64(e)}}})
	return string(doc)
}

// check returns 0 when the request may pass, or the status Istio would answer with.
func (j *jwtAuthn) check(authz string, cfg *stacks.JWT) (int, string) {
	tok, ok := strings.CutPrefix(authz, "Bearer ")
	if authz == "" {
		if cfg.Mode == "strict" {
			return http.StatusForbidden, "RBAC: access denied"
		}
		return 0, "" // a RequestAuthentication alone lets requests without a token through
	}
	if !ok || !j.verify(tok, cfg.Issuer) {
		return http.StatusUnauthorized, "Jwt verification fails"
	}
	return 0, ""
}

func (j *jwtAuthn) verify(tok, issuer string) bool {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return false
	}
	var hdr struct{ Alg, Kid string }
	var claims struct {
		Iss string
		Exp int64
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	cb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || json.Unmarshal(hb, &hdr) != nil || json.Unmarshal(cb, &claims) != nil {
		return false
	}
	if hdr.Alg != "RS256" || hdr.Kid != j.kid || claims.Iss != issuer || time.Now().Unix() > claims.Exp {
		return false
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	return rsa.VerifyPKCS1v15(&j.key.PublicKey, crypto.SHA256, sum[:], sig) == nil
}

// accessLog is the JSON access log of scenario 11, written only for requests whose response
// flags match the filter (Envoy's response_flag_filter). Its cost per written entry is
// measured at start like the JWT filter's.
type accessLog struct {
	mu   sync.Mutex
	w    io.Writer
	cost time.Duration
}

func newAccessLog(w io.Writer) *accessLog {
	if w == nil {
		w = io.Discard
	}
	a := &accessLog{w: io.Discard}
	t0 := time.Now()
	for i := 0; i < 100; i++ {
		a.write(time.Now(), "GET", "/calibration", 200, "NR", time.Millisecond)
	}
	a.cost = time.Since(t0) / 100
	a.w = w
	return a
}

// log writes an entry when flags match one of filter; it reports whether it wrote one.
func (a *accessLog) log(st *stream, status int, flags string, filter []string) bool {
	if !slices.Contains(filter, flags) {
		return false
	}
	a.write(st.started, st.method, st.path, status, flags, time.Since(st.started))
	return true
}

func (a *accessLog) write(start time.Time, method, path string, status int, flags string, d time.Duration) {
	line, _ := json.Marshal(map[string]any{
		"start_time": start.UTC().Format(time.RFC3339Nano), "method": method, "path": path,
		"protocol": "HTTP/2", "response_code": status, "response_flags": flags,
		"duration": d.Milliseconds(),
	})
	a.mu.Lock()
	_, _ = a.w.Write(append(line, '\n'))
	a.mu.Unlock()
}
