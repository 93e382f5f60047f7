package h2dial

import (
	"testing"
	"time"
)

// Two clients' results combine into what one client recording every sample would report.
func TestCombineMatchesOneHistogram(t *testing.T) {
	var a, b, all Histogram
	for i := 1; i <= 900; i++ {
		d := time.Duration(i) * 37 * time.Microsecond
		a.Record(d)
		all.Record(d)
	}
	for i := 1; i <= 100; i++ {
		d := time.Duration(i) * 3 * time.Millisecond
		b.Record(d)
		all.Record(d)
	}
	ra := &Result{URL: "http://a", Requests: 900, RPS: 90, Latency: a.Summary(), Histogram: a.Buckets(), ConnectionsOpened: 1,
		Connections: []ConnStat{{ID: 0, Requests: 900}}, StatusCodes: map[string]int64{"200": 900}}
	rb := &Result{URL: "http://b", Requests: 100, Errors: 2, RPS: 10, Latency: b.Summary(), Histogram: b.Buckets(), ConnectionsOpened: 1,
		Connections: []ConnStat{{ID: 0, Requests: 100}}, StatusCodes: map[string]int64{"200": 98, "503": 2}}
	got := Combine([]*Result{ra, rb})
	want := all.Summary()
	if got.Latency.Count != want.Count || got.Latency.P50 != want.P50 || got.Latency.P99 != want.P99 || got.Latency.Max != want.Max || got.Latency.Min != want.Min {
		t.Fatalf("combined latency %+v, one histogram %+v", got.Latency, want)
	}
	if got.Requests != 1000 || got.Errors != 2 || got.RPS != 100 || got.ConnectionsOpened != 2 || len(got.Connections) != 2 || got.Connections[1].ID != 1 {
		t.Fatalf("combined counts: %+v", got)
	}
	if got.StatusCodes["200"] != 998 || got.StatusCodes["503"] != 2 {
		t.Fatalf("status codes %v", got.StatusCodes)
	}
}
