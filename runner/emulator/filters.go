package emulator

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/igwlab/igwlab/internal/jwt"
	"github.com/igwlab/igwlab/stacks"
)

// jwtAuthn is the JWT filter of scenario 11: RS256 tokens signed by a key generated when the
// pool starts, verified for real on every request. Its cost on the worker's clock is the
// median time this machine takes to verify one token, measured at start.
type jwtAuthn struct {
	key  *jwt.Key
	cost time.Duration
}

func newJWTAuthn() (*jwtAuthn, error) {
	key, err := jwt.Generate("igwlab-local")
	if err != nil {
		return nil, err
	}
	j := &jwtAuthn{key: key}
	tok := key.Token("calibration", time.Hour)
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

// Token mints a token for issuer, valid for ttl.
func (j *jwtAuthn) Token(issuer string, ttl time.Duration) string { return j.key.Token(issuer, ttl) }

// JWKS returns the public key set.
func (j *jwtAuthn) JWKS() string { return j.key.JWKS() }

// check returns 0 when the request may pass, or the status Istio would answer with.
func (j *jwtAuthn) check(authz string, cfg *stacks.JWT) (int, string) {
	tok, ok := strings.CutPrefix(authz, "Bearer ")
	if authz == "" {
		if cfg.Mode == "strict" {
			return http.StatusForbidden, "RBAC: access denied"
		}
		return 0, "" // a RequestAuthentication alone lets requests without a token through
	}
	if !ok || !j.key.Verify(tok, cfg.Issuer) {
		return http.StatusUnauthorized, "Jwt verification fails"
	}
	return 0, ""
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
