package suite

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/igwlab/igwlab/runner/measure"
)

// progress reports a suite run on stderr. On a terminal it keeps one live line (scenario i of
// n, a bar with the ETA, the current phase, each pod's active connections and their CV);
// elsewhere it prints plain lines, one per step, with no live updates.
type progress struct {
	w     io.Writer
	tty   bool
	mu    sync.Mutex
	start time.Time
	plan  []time.Duration // planned length of each scenario
	done  time.Duration   // planned length of the scenarios finished
	i, n  int
	name  string
	phase string
	since time.Time // when the current scenario started
	live  string
	width int // terminal columns; the live line is cut to fit, since a wrapped line cannot be redrawn
}

func newProgress(w io.Writer, tty bool, width int, plan []time.Duration) *progress {
	return &progress{w: w, tty: tty, width: width, plan: plan, n: len(plan), start: time.Now()}
}

func (p *progress) printf(format string, a ...any) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, format, a...)
	p.redraw()
}

// scenario starts scenario i (0-based).
func (p *progress) scenario(i int, name, title string) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	p.i, p.name, p.phase, p.live, p.since = i, name, "", "", time.Now()
	p.mu.Unlock()
	p.printf("[%d/%d] %s: %s\n", i+1, p.n, name, title)
}

// step reports a phase of the current scenario.
func (p *progress) step(format string, a ...any) {
	if p == nil || p.w == nil {
		return
	}
	text := fmt.Sprintf(format, a...)
	if p.tty {
		p.mu.Lock()
		p.phase = text
		p.redraw()
		p.mu.Unlock()
		return
	}
	p.printf("       %s\n", text)
}

// sample updates the live line from the sampler.
func (p *progress) sample(l measure.Live, pods []string) {
	if p == nil || p.w == nil || !p.tty {
		return
	}
	counts := make([]string, len(pods))
	for i, n := range pods {
		counts[i] = fmt.Sprint(int(l.Connections[n]))
	}
	p.mu.Lock()
	p.live = fmt.Sprintf("conns %s  CV %.2f  %.0f rps", strings.Join(counts, " "), l.CV, l.RPS)
	p.redraw()
	p.mu.Unlock()
}

// finish ends scenario i with its one-line result.
func (p *progress) finish(i int, line string) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	if i < len(p.plan) {
		p.done += p.plan[i]
	}
	p.phase, p.live, p.name = "", "", "" // no live line until the next scenario starts
	p.mu.Unlock()
	p.printf("       %s\n", line)
}

// redraw draws the live line (p.mu held).
func (p *progress) redraw() {
	if !p.tty || p.name == "" {
		return
	}
	var total time.Duration
	for _, d := range p.plan {
		total += d
	}
	inScenario := time.Since(p.since)
	if p.i < len(p.plan) {
		inScenario = min(inScenario, p.plan[p.i])
	}
	frac := 0.0
	if total > 0 {
		frac = float64(p.done+inScenario) / float64(total)
	}
	frac = min(frac, 1)
	eta := "?"
	if elapsed := time.Since(p.start); frac > 0.02 {
		eta = max(0, time.Duration(float64(elapsed)/frac)-elapsed).Round(time.Second).String()
	}
	const width = 20
	filled := min(width, int(frac*width))
	bar := strings.Repeat("█", filled) + strings.Repeat("░", width-filled)
	line := fmt.Sprintf("[%d/%d] %s %s %3.0f%% ETA %s", p.i+1, p.n, p.name, bar, 100*frac, eta)
	if p.phase != "" {
		line += " | " + p.phase
	}
	if p.live != "" {
		line += " | " + p.live
	}
	if r := []rune(line); p.width > 1 && len(r) > p.width-1 {
		line = string(r[:p.width-1])
	}
	fmt.Fprintf(p.w, "\r\033[K%s", line)
}

// close ends the live line.
func (p *progress) close() {
	if p == nil || p.w == nil || !p.tty {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.w, "\r\033[K")
}
