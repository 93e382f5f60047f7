package stacks

import (
	"strings"
	"testing"
)

func TestBuiltinCatalog(t *testing.T) {
	cat, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"01-baseline", "02-trigger", "03-mcs-cap", "04-mrpc", "05-windows",
		"02-fortio", "03-fortio", "04-fortio", "05-fortio", "06-waypoint-baseline",
		"07-waypoint-trigger", "08-buffers-control", "08-buffers", "09-hol-blocking", "10-rotation",
		"11-realistic-filters", "12-grpc-variant", "13-conn-balance-control", "13-conn-balance",
		"14-upload-window-control", "14-upload-window", "15-scale-out", "15-scale-out-rotation",
		"16-rolling-restart", "17-config-push", "18-lockstep-duration", "18-lockstep-count",
		"19-streams", "19-streams-rotation", "19-streams-duration", "19-sse-rotation", "20-grpc-capped", "20-grpc-rotation", "20-grpc-pool", "20-grpc-round-robin", "21-cpu-limit-2-workers", "21-cpu-limit-8-workers",
		"22-ew-pinned", "22-ew-rotation", "22-ew-pool", "23-zt-2-threads", "23-zt-4-threads"}
	if got := strings.Join(cat.Names(), " "); got != strings.Join(want, " ") {
		t.Fatalf("run order\n got %s\nwant %s", got, strings.Join(want, " "))
	}
}
