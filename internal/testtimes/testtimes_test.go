package testtimes

import (
	"io"
	"strings"
	"testing"
	"time"
)

// stream is make test as it prints with GOTESTFLAGS=-json: echoed commands between events.
const stream = `go vet ./...
go test -json -count=1 -timeout 15m $(go list ./... | grep -v x)
{"Time":"2026-12-05T10:00:10Z","Action":"start","Package":"m/a"}
{"Time":"2026-12-05T10:00:10Z","Action":"run","Package":"m/a","Test":"TestFast"}
{"Time":"2026-12-05T10:00:11Z","Action":"pass","Package":"m/a","Test":"TestFast","Elapsed":0.5}
{"Time":"2026-12-05T10:00:11Z","Action":"start","Package":"m/b"}
{"Time":"2026-12-05T10:00:12Z","Action":"pass","Package":"m/b","Test":"TestSlow/sub","Elapsed":30}
{"Time":"2026-12-05T10:00:42Z","Action":"pass","Package":"m/b","Test":"TestSlow","Elapsed":31}
{"Time":"2026-12-05T10:00:42Z","Action":"pass","Package":"m/b","Elapsed":31.2}
{"Time":"2026-12-05T10:00:42Z","Action":"pass","Package":"m/a","Elapsed":0.6}
go test -json -count=1 -timeout 15m ./c
{"Time":"2026-12-05T10:00:50Z","Action":"start","Package":"m/b"}
{"Time":"2026-12-05T10:00:51Z","Action":"pass","Package":"m/b","Test":"TestSlow","Elapsed":0.25}
{"Time":"2026-12-05T10:00:51Z","Action":"pass","Package":"m/b","Elapsed":0.3}
{"Time":"2026-12-05T10:01:00Z","Action":"start","Package":"m/c"}
{"Time":"2026-12-05T10:01:01Z","Action":"output","Package":"m/c","Test":"TestBroken","Output":"boom\n"}
{"Time":"2026-12-05T10:01:02Z","Action":"fail","Package":"m/c","Test":"TestBroken","Elapsed":2}
{"Time":"2026-12-05T10:01:02Z","Action":"fail","Package":"m/c","Elapsed":2.1}
`

func TestReadSplitsPhasesAndRanksTests(t *testing.T) {
	run, err := Read(strings.NewReader(stream), func() time.Time { return time.Time{} }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Phases) != 3 {
		t.Fatalf("phases: %+v", run.Phases)
	}
	if got := phaseName(run.Phases[1].Command); got != "go test (the other packages)" || len(run.Phases[1].Packages) != 2 {
		t.Errorf("phase 2: %q with %v", got, run.Phases[1].Packages)
	}
	if got := phaseName(run.Phases[2].Command); got != "go test ./c" {
		t.Errorf("phase 3: %q", got)
	}
	// m/b ran twice (as make test's -short and make test-e2e run a package): both runs' time,
	// its test counted once.
	if run.Packages[0].Name != "m/b" || run.Packages[0].Seconds != 31.5 || run.Packages[0].Tests != 1 {
		t.Errorf("slowest package: %+v", run.Packages[0])
	}
	if len(run.Tests) != 4 || run.Tests[0].Name != "TestSlow" {
		t.Errorf("tests (subtests left out, slowest first): %+v", run.Tests)
	}
	if !run.Failed() || run.Failures["m/c TestBroken"] != "boom\n" {
		t.Errorf("failures: %v", run.Failures)
	}
	md := Markdown(run, Setting{Module: "m", Commit: "abc", Cores: 2, Go: "go1.26", CPU: "cpu", Note: "warm"}, 2)
	for _, want := range []string{"| `./b` | 31.5 s | 1 |", "| `TestSlow` | `./b` | 31.0 s |", "1 package under 1 s each", "| `go test ./c` |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "TestFast") {
		t.Errorf("only the 2 slowest tests are listed:\n%s", md)
	}
}

func TestPhaseNames(t *testing.T) {
	for _, c := range []struct{ cmd, want string }{
		{`pkgs="$(go run ./hack/testplan packages -lab auto)" && go vet $pkgs`, "go vet"},
		{`pkgs="$(go run ./hack/testplan packages -q -lab all)" && go test -json -short -count=1 -timeout 15m $pkgs`, "go test -short (every package)"},
		{`args="$(go run ./hack/testplan e2e -except runner/cli,runner/conformance)" && go test -json -count=1 $args`, "go test (end to end, the other packages)"},
		{`args="$(go run ./hack/testplan e2e -only runner/cli)" && go test -json -count=1 $args`, "go test (end to end) ./runner/cli"},
		{`go test -json -count=1 -timeout 20m -parallel 8 ./runner/conformance/`, "go test ./runner/conformance/"},
		{`args="$(go run ./hack/testplan e2e -except runner/conformance)" && GO=go bash hack/gotest.sh -json -timeout 15m $args`, "go test (end to end, the other packages)"},
		{`pkgs="$(go run ./hack/testplan packages -q -lab all -except runner/conformance)" && GO=go bash hack/gotest.sh -p 2 -json -short -timeout 15m $pkgs`, "go test -short (every package)"},
	} {
		if !startsPhase(c.cmd) {
			t.Errorf("%q starts no phase", c.cmd)
		}
		if got := phaseName(c.cmd); got != c.want {
			t.Errorf("phaseName(%q) = %q, want %q", c.cmd, got, c.want)
		}
	}
	if startsPhase("bash hack/apt-need.sh h2load:nghttp2-client") {
		t.Error("apt-need.sh starts a phase")
	}
}

func TestLiveStampsTheCommands(t *testing.T) {
	clock := time.Date(2026, 12, 5, 9, 59, 0, 0, time.UTC)
	run, err := Read(strings.NewReader(stream), func() time.Time { clock = clock.Add(time.Second); return clock }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// The vet phase starts when its echo arrives and ends when the next command's does:
	// compiling shows in the phases' times though no event reports it.
	if d := run.Phases[0].End.Sub(run.Phases[0].Start); d != time.Second {
		t.Errorf("vet phase %v, want 1s", d)
	}
}
