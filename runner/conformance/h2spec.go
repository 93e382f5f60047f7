package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Result is what one h2spec case did: its verdict (with the Actual h2spec printed for a
// failure), the frames the gateway sent on the case's last connection and who closed it, and
// how the gateway's counters moved.
type Result struct {
	Case     string
	Verdict  string // pass, fail, skip
	Actual   string
	Frames   []string
	End      string
	Counters map[string]int64
}

// Cases lists h2spec's cases by id (generic/3.1/1, http2/6.5.2/3, hpack/5.2/1), read from its
// dry run, in its order.
func Cases(ctx context.Context, bin string) ([]string, error) {
	out, err := exec.CommandContext(ctx, bin, "--dryrun").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --dryrun: %w", bin, err)
	}
	roots := map[string]string{"Generic tests": "generic", "Hypertext Transfer Protocol": "http2", "HPACK:": "hpack"}
	ansi := regexp.MustCompile("\x1b\\[[0-9;]*m")
	section := regexp.MustCompile(`^\s+([0-9][0-9.]*)\. `)
	caseLine := regexp.MustCompile(`^\s+([0-9]+): `)
	var ids []string
	root, sec := "", ""
	sc := bufio.NewScanner(strings.NewReader(ansi.ReplaceAllString(string(out), "")))
	for sc.Scan() {
		line := sc.Text()
		for prefix, key := range roots {
			if strings.HasPrefix(line, prefix) {
				root, sec = key, ""
			}
		}
		if m := section.FindStringSubmatch(line); m != nil {
			sec = m[1]
		} else if m := caseLine.FindStringSubmatch(line); m != nil && root != "" && sec != "" {
			ids = append(ids, root+"/"+sec+"/"+m[1])
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%s --dryrun listed no case", bin)
	}
	return ids, nil
}

// Target is a running `igwlab serve` with one gateway pod.
type Target struct {
	VIP   string // host:port
	Admin string // the pod's admin base URL
}

// RunCase runs one case through rec against t, and reads how the pod's counters moved.
func RunCase(ctx context.Context, bin string, t Target, rec *Recorder, id string, timeout time.Duration) (Result, error) {
	res := Result{Case: id}
	before, err := Counters(ctx, t.Admin)
	if err != nil {
		return res, err
	}
	dir, err := os.MkdirTemp("", "h2spec-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	report := filepath.Join(dir, "junit.xml")
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, bin, "-h", "127.0.0.1", "-p", strconv.Itoa(rec.Port()),
		"-o", strconv.Itoa(int(timeout/time.Second)), "-j", report, id)
	out, runErr := cmd.CombinedOutput()
	if res.Verdict, res.Actual, err = readJUnit(report); err != nil {
		return res, fmt.Errorf("%s: %v (h2spec: %v)\n%s", id, err, runErr, out)
	}
	res.Frames, res.End = rec.Take()
	// The case's connections close before its counters are read: the gateway counts a
	// connection's end (and its streams') as it tears it down.
	after, err := settled(ctx, t.Admin)
	if err != nil {
		return res, err
	}
	res.Counters = Delta(before, after)
	return res, nil
}

// junit is the part of h2spec's JUnit report a case's verdict is in.
type junit struct {
	Suites []struct {
		Cases []struct {
			Skipped *struct{} `xml:"skipped"`
			Failure *struct {
				Text string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Text string `xml:",chardata"`
			} `xml:"error"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func readJUnit(path string) (verdict, actual string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", err
	}
	// h2spec writes a PING's opaque data into its messages, NUL bytes and all, which XML forbids.
	b = bytes.ReplaceAll(b, []byte{0}, []byte(" "))
	var j junit
	if err := xml.Unmarshal(b, &j); err != nil {
		return "", "", err
	}
	for _, s := range j.Suites {
		for _, c := range s.Cases {
			switch {
			case c.Skipped != nil:
				return "skip", "", nil
			case c.Failure != nil || c.Error != nil:
				text := ""
				if c.Failure != nil {
					text = c.Failure.Text
				} else {
					text = c.Error.Text
				}
				lines := strings.Split(strings.TrimSpace(text), "\n")
				return "fail", strings.TrimSpace(lines[len(lines)-1]), nil
			default:
				return "pass", "", nil
			}
		}
	}
	return "", "", fmt.Errorf("no test case in %s", path)
}

// Watched are the counters the table states, by their names in the pod's /stats: the
// connection manager's without their prefix, the codec's with http2.
var Watched = []string{
	"downstream_cx_http1_total", "downstream_cx_http2_total",
	"downstream_cx_destroy_local", "downstream_cx_destroy_remote", "downstream_cx_destroy_active_rq",
	"downstream_cx_destroy_local_active_rq", "downstream_cx_destroy_remote_active_rq",
	"downstream_cx_delayed_close_timeout", "downstream_cx_protocol_error",
	"downstream_rq_total", "downstream_rq_rx_reset", "downstream_rq_tx_reset",
	"downstream_rq_2xx", "downstream_rq_4xx", "downstream_rq_5xx", "downstream_rq_too_many_premature_resets",
	"http2.rx_reset", "http2.tx_reset", "http2.rx_messaging_error", "http2.trailers", "http2.header_overflow",
	"http2.stream_refused_errors", "http2.goaway_sent", "http2.outbound_flood", "http2.outbound_control_flood",
	"http2.inbound_empty_frames_flood", "http2.inbound_priority_frames_flood", "http2.inbound_window_update_frames_flood",
}

// Counters reads the watched counters from a pod's /stats, plus its active connections.
func Counters(ctx context.Context, admin string) (map[string]int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, admin+"/stats", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), ": ")
		if !ok {
			continue
		}
		if i := strings.Index(name, ";."); i >= 0 && strings.HasPrefix(name, "http.") {
			name = name[i+2:] // the connection manager's stat prefix
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64); err == nil {
			out[name] = n
		}
	}
	return out, sc.Err()
}

// settled reads the counters once no connection is open.
func settled(ctx context.Context, admin string) (map[string]int64, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := Counters(ctx, admin)
		if err != nil {
			return nil, err
		}
		if c["downstream_cx_active"] == 0 || time.Now().After(deadline) {
			return c, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Delta is how the watched counters moved, those that did.
func Delta(before, after map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for _, n := range Watched {
		if d := after[n] - before[n]; d != 0 {
			out[n] = d
		}
	}
	return out
}

// FormatCounters writes counter moves as the table does: "name+1, name+2", in Watched order.
func FormatCounters(c map[string]int64) string {
	var parts []string
	for _, n := range Watched {
		if d, ok := c[n]; ok && d != 0 {
			parts = append(parts, fmt.Sprintf("%s%+d", n, d))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
