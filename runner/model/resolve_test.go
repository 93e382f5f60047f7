package model

import (
	"testing"
	"time"
)

// TestResolution: a request answers at once when the last resolution is 30 s old or more,
// else at the 30 s mark; requests while one is due fold into it.
func TestResolution(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var r Resolution
	r.Resolved(t0)
	for _, c := range []struct {
		at, want time.Duration
		ok       bool
	}{
		{5 * time.Second, 30 * time.Second, true},
		{10 * time.Second, 0, false}, // one is due at 30 s
	} {
		got, ok := r.Request(t0.Add(c.at))
		if ok != c.ok || (ok && !got.Equal(t0.Add(c.want))) {
			t.Errorf("request at %s: %v %v, want %v %v", c.at, got.Sub(t0), ok, c.want, c.ok)
		}
	}
	r.Resolved(t0.Add(30 * time.Second))
	if got, ok := r.Request(t0.Add(70 * time.Second)); !ok || !got.Equal(t0.Add(70*time.Second)) {
		t.Errorf("request 40 s after the last resolution answers at %v, want at once", got.Sub(t0))
	}
}
