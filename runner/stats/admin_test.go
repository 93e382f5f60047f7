package stats

import "testing"

func TestDrainingSumsBothGauges(t *testing.T) {
	for _, c := range []struct {
		text string
		want int
	}{
		{"listener_manager.total_listeners_draining: 0\nlistener_manager.total_filter_chains_draining: 0\n", 0},
		{"listener_manager.total_listeners_draining: 1\nlistener_manager.total_filter_chains_draining: 2\n", 3},
		{"listener_manager.total_listeners_active: 4\nlistener_manager.total_filter_chains_draining: 1", 1},
		{"", 0},
	} {
		if got := Draining(c.text); got != c.want {
			t.Errorf("%q: %d, want %d", c.text, got, c.want)
		}
	}
}

func TestParseServerInfo(t *testing.T) {
	si, err := ParseServerInfo([]byte(`{"version":"abc/1.35.3","command_line_options":{"concurrency":2}}`))
	if err != nil || si.Concurrency != 2 || si.Version != "abc/1.35.3" {
		t.Errorf("%+v %v", si, err)
	}
	if _, err := ParseServerInfo([]byte("not json")); err == nil {
		t.Error("no error for a body that is not JSON")
	}
}
