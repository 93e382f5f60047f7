package h2dial

import (
	"testing"
	"time"
)

func BenchmarkHistogramRecord(b *testing.B) {
	var h Histogram
	d := 1234 * time.Microsecond
	for b.Loop() {
		h.Record(d)
		d += 7 * time.Microsecond
	}
}
