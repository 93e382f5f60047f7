package diagnose

import (
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/runner/stats"
)

// pod is one pod of a window: up uptime seconds, holding active connections, opened of them in
// the window, with requests.
func pod(name string, up, active, opened, requests float64) PodWindow {
	pre := stats.Pod{Name: name, CxActive: active - opened}
	post := stats.Pod{Name: name, CxActive: active, CxTotal: opened, RqTotal: requests, Uptime: up}
	return PodWindow{Name: name, Pre: pre, Post: post, Delta: stats.Pod{Name: name, CxTotal: opened, RqTotal: requests}, Workers: 2}
}

func TestYoungPodsAfterAScaleOut(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pods  []PodWindow
		young []string
		says  string
	}{
		{"three new pods hold nothing of the long-lived connections", []PodWindow{
			pod("gw-a", 86400, 8, 0, 1000), pod("gw-b", 86400, 8, 0, 1000), pod("gw-c", 86400, 8, 0, 1000),
			pod("gw-d", 40, 0, 0, 0), pod("gw-e", 40, 0, 0, 0), pod("gw-f", 40, 0, 0, 0),
		}, []string{"gw-d", "gw-e", "gw-f"}, "holds 0% of the open connections against 17% for an even spread"},
		{"a new pod that got its share", []PodWindow{
			pod("gw-a", 86400, 6, 1, 1000), pod("gw-b", 86400, 6, 1, 1000), pod("gw-c", 40, 6, 6, 1000),
		}, nil, ""},
		{"all pods the same age", []PodWindow{
			pod("gw-a", 600, 12, 0, 1000), pod("gw-b", 600, 0, 0, 0),
		}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Judge(&Window{Span: 30 * time.Second, Pods: tc.pods, Names: stats.Names{HCMPrefix: "outbound_0.0.0.0_80", Listener: "0.0.0.0_80"}})
			var got []string
			for _, y := range r.Young {
				got = append(got, y.Name)
			}
			if strings.Join(got, ",") != strings.Join(tc.young, ",") {
				t.Fatalf("young pods %v, want %v", got, tc.young)
			}
			if tc.says != "" && !strings.Contains(r.Young[0].Text, tc.says) || tc.says != "" && !strings.Contains(r.Young[0].Text, "max_requests_per_connection") {
				t.Fatalf("text %q does not say %q and name the lever", r.Young[0].Text, tc.says)
			}
		})
	}
}
