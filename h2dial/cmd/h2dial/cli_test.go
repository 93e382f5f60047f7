package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/igwlab/igwlab/internal/testutil"
)

func TestCommandLine(t *testing.T) {
	srv := testutil.H2C(t, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(r.URL.Path))
	}))
	var out, errb bytes.Buffer
	if err := Run(context.Background(), []string{"-url", srv.URL + "/x", "-path", "/get", "-c", "3", "-duration", "300ms", "-json", "-header", "X-A: b"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	var res struct {
		URL               string `json:"url"`
		Requests          int64  `json:"requests"`
		ConnectionsOpened int    `json:"connections_opened"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(res.URL, "/get") || res.Requests == 0 || res.ConnectionsOpened != 1 {
		t.Fatalf("%+v", res)
	}
	for _, bad := range [][]string{{"-mode", "pooled", "-url", srv.URL}, {"-header", "nocolon", "-url", srv.URL}, {"-url", srv.URL, "stray"}, {}} {
		err := Run(context.Background(), bad, &out, &errb)
		if err == nil || exitCode(err) != 2 {
			t.Errorf("%v: err %v (exit %d), want a usage error", bad, err, exitCode(err))
		}
	}
}
