package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/grpclab"
	"github.com/igwlab/igwlab/internal/testutil"
)

// serve and load as the image runs them: the client's JSON result on stdout, from calls the
// server answered over one connection.
func TestServeAndLoad(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	var serveErr bytes.Buffer
	go func() { served <- Run(ctx, []string{"serve", "-addr", addr}, &bytes.Buffer{}, &serveErr) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	var out, errb bytes.Buffer
	for deadline := time.Now().Add(5 * time.Second); ; {
		out.Reset()
		err := Run(context.Background(), []string{"load", "-target", addr, "-concurrency", "8", "-duration", "300ms"}, &out, &errb)
		if err != nil {
			t.Fatalf("load: %v\n%s", err, errb.String())
		}
		var r grpclab.Result
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatalf("load printed %q: %v", out.String(), err)
		}
		if r.Requests == 0 && time.Now().Before(deadline) {
			continue // the server was not listening yet
		}
		if r.Requests == 0 || r.Errors != 0 || r.Dials != 1 || r.Codes["OK"] != r.Requests || r.Call != grpclab.Call {
			t.Fatalf("result %+v", r)
		}
		break
	}
	if !strings.Contains(serveErr.String(), "serving "+grpclab.Call) {
		t.Errorf("serve said %q", serveErr.String())
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "usage:"},
		{[]string{"bench"}, `unknown command "bench"`},
		{[]string{"load", "-target", "127.0.0.1:1"}, "duration 0s: want more than 0"},
		{[]string{"load", "-target", "nohost", "-duration", "1s"}, `target "nohost": want host:port`},
		{[]string{"load", "-target", "127.0.0.1:1", "-duration", "1s", "-concurrency", "0"}, "concurrency 0: want 1 to 100000"},
		{[]string{"serve", "extra"}, "unexpected arguments"},
	} {
		err := Run(context.Background(), tc.args, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || exitCode(err) != 2 {
			t.Errorf("%q: %v (exit %d), want a usage error saying %q", tc.args, err, exitCode(err), tc.want)
		}
	}
}

// Load goes off loopback only when told to, and is refused before anything is dialled.
func TestLoadRefusesRemoteTargets(t *testing.T) {
	err := Run(context.Background(), []string{"load", "-target", "10.1.2.3:9000", "-duration", "1s"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "only loopback targets") {
		t.Fatalf("a remote target: %v", err)
	}
}
