package stacks

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// maxFileSize bounds a scenario file; anything larger is not a scenario.
const maxFileSize = 256 << 10

// ParseFile reads one scenario file. file is the name used in errors. Every problem in the
// file is reported, each with its line, field and allowed values.
func ParseFile(file string, data []byte) (*Scenario, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &FieldError{File: file, Msg: "file is empty: a scenario needs at least name, client and load"}
	}
	if len(data) > maxFileSize {
		return nil, &FieldError{File: file, Msg: fmt.Sprintf("file is %d bytes; a scenario file is at most %d", len(data), maxFileSize)}
	}
	var doc yaml.Node
	docs := yaml.NewDecoder(bytes.NewReader(data))
	if err := docs.Decode(&doc); err != nil && err != io.EOF {
		return nil, &FieldError{File: file, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if len(doc.Content) == 0 {
		return nil, &FieldError{File: file, Msg: "file holds no YAML document (only comments or blank lines): a scenario needs at least name, client and load"}
	}
	// A second document would be silently ignored by the decoder: refuse it, so that what
	// runs is all that is written.
	var second yaml.Node
	if err := docs.Decode(&second); err == nil {
		return nil, &FieldError{File: file, Line: second.Line, Msg: "a scenario file holds one YAML document; a second one (---) starts here: put each scenario in its own file"}
	} else if err != io.EOF {
		return nil, &FieldError{File: file, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var errs []error
	checkShape(file, doc.Content[0], reflect.TypeOf(Scenario{}), "", &errs)
	if len(errs) > 0 {
		return nil, joinCapped(errs)
	}
	var s Scenario
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return nil, &FieldError{File: file, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	s.File = file
	if errs := validate(&s, &doc); len(errs) > 0 {
		return nil, joinCapped(errs)
	}
	return &s, nil
}

// maxErrors bounds the problems reported for one file: a generated file with a hundred
// thousand bad list items gets a readable error, not megabytes of it.
const maxErrors = 50

func joinCapped(errs []error) error {
	if len(errs) > maxErrors {
		more := len(errs) - maxErrors
		errs = append(errs[:maxErrors:maxErrors], fmt.Errorf("... and %d more problems", more))
	}
	return errors.Join(errs...)
}

var (
	namePattern   = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
	feedPattern   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 ._-]{0,39}$`)
	rolePattern   = regexp.MustCompile(`^[a-z][a-z-]{0,31}$`)
	hypotheses    = []string{"", "H-A", "H-B", "H-C", "H-D", "H-E", "S11", "WAYPOINT", "S12", "S9", "S10", "S8", "S15", "S16", "S17", "S18", "S19", "S20", "S21", "EW", "ZT"}
	jwtModes      = []string{"permissive", "strict"}
	responseFlags = []string{"DC", "DF", "DI", "DO", "DPE", "FI", "IH", "LH", "LR", "NC", "NFCF", "NR", "OM",
		"RFCF", "RL", "RLSE", "SI", "UAEX", "UC", "UF", "UH", "UMSDR", "UO", "UPE", "UR", "URX", "UT"}
)

// The allowed values of the scenario's plain fields (knobs carry theirs in the Registry). The
// shape check quotes them for a value that is not a number or a duration at all, validate for
// one out of range: one table, so the two cannot disagree.
var (
	intRanges = map[string][2]int{
		"order":                                       {0, 9999},
		"client.concurrency":                          {1, 20000},
		"client.connections":                          {1, 1000},
		"client.slow.workers":                         {1, 1000},
		"client.body_bytes":                           {0, 1 << 30},
		"client.message_bytes":                        {1, 4 << 20},
		"local.client.concurrency":                    {1, 20000},
		"local.client.connections":                    {1, 1000},
		"requires.min_concurrency":                    {0, 256},
		"east_west.clients":                           {1, 64},
		"east_west.ztunnel.workers":                   {1, 64},
		"east_west.ztunnel.pool_max_streams_per_conn": {1, 65535},
	}
	durRanges = map[string][2]time.Duration{
		"load.duration":       {time.Second, 24 * time.Hour},
		"load.warmup":         {0, time.Hour},
		"load.settle":         {0, time.Hour},
		"load.sample_every":   {100 * time.Millisecond, 10 * time.Second},
		"local.load.duration": {time.Second, 24 * time.Hour},
		"local.load.warmup":   {0, time.Hour},
		"local.load.settle":   {0, time.Hour},
		"local.service_time":  {time.Microsecond, time.Second},
	}
	rangeNotes = map[string]string{
		"client.qps":               "; 0 means as fast as possible",
		"local.client.qps":         "; 0 keeps the lab's",
		"requires.min_concurrency": "; 0 means no requirement",
		"local.client.concurrency": "; 0 keeps the lab's",
		"local.client.connections": "; 0 keeps the lab's",
		"client.connections":       "; 0 means 1",
		"client.body_bytes":        "; 0 means GET",
		"client.message_bytes":     "; 0 means 1024",
		"load.sample_every":        "; 0 means once a second",
		"local.service_time":       "; 0 keeps the pool's (--service-time)",
	}
)

// maxQPS bounds client.qps and local.client.qps.
const maxQPS = 1e6

// allowedRange returns the allowed values of the field at path as text, or "" when the
// field has no numeric range.
func allowedRange(path string) string {
	var r string
	if spec, ok := knobAt(path); ok {
		if spec.Type == Uint32 {
			return spec.Range() + " " + spec.Unit
		}
		return spec.Range()
	}
	if v, ok := intRanges[path]; ok {
		r = fmt.Sprintf("%d..%d", v[0], v[1])
	} else if v, ok := durRanges[path]; ok {
		r = fmt.Sprintf("%s..%s", Duration(v[0]), Duration(v[1]))
	} else if path == "client.qps" || path == "local.client.qps" {
		r = fmt.Sprintf("0..%d", int(maxQPS))
	} else if path == "client.message_rate" {
		r = fmt.Sprintf("more than 0, at most %d messages a second on each stream", maxMessageRate)
	}
	if r == "" {
		return ""
	}
	return r + rangeNotes[path]
}

func validate(s *Scenario, doc *yaml.Node) []error {
	var errs []error
	bad := func(field, msg string) {
		errs = append(errs, &FieldError{File: s.File, Line: lineOf(doc, field), Field: field, Msg: msg})
	}
	oneOf := func(field, v string, allowed []string) {
		for _, a := range allowed {
			if v == a {
				return
			}
		}
		shown := make([]string, 0, len(allowed))
		for _, a := range allowed {
			if a != "" {
				shown = append(shown, a)
			}
		}
		bad(field, fmt.Sprintf("%q is not allowed (allowed: %s)", v, strings.Join(shown, ", ")))
	}
	intRange := func(field string, v int) {
		r := intRanges[field]
		if v < r[0] || v > r[1] {
			bad(field, fmt.Sprintf("%d is out of range (allowed %s)", v, allowedRange(field)))
		}
	}
	durRange := func(field string, d Duration) {
		r := durRanges[field]
		if d.D() < r[0] || d.D() > r[1] {
			bad(field, fmt.Sprintf("%s is out of range (allowed %s)", d, allowedRange(field)))
		}
	}
	// Written so that NaN, which compares false with everything, is out of range too.
	qpsRange := func(field string, v float64) {
		if !(v >= 0 && v <= maxQPS) {
			bad(field, fmt.Sprintf("%g is out of range (allowed %s)", v, allowedRange(field)))
		}
	}

	stem := strings.TrimSuffix(path.Base(s.File), ".yaml")
	switch {
	case s.Name == "":
		bad("name", "missing; it must equal the file name without .yaml ("+stem+")")
	case !namePattern.MatchString(s.Name):
		bad("name", fmt.Sprintf("%q must be lower-case letters, digits and dashes, at most 63 characters", s.Name))
	case s.Name != stem:
		bad("name", fmt.Sprintf("%q must equal the file name without .yaml (%q)", s.Name, stem))
	}
	intRange("order", s.Order)
	oneOf("hypothesis", s.Hypothesis, hypotheses)

	checkClient(s, bad, intRange, qpsRange, oneOf)

	durRange("load.duration", s.Load.Duration)
	durRange("load.warmup", s.Load.Warmup)
	durRange("load.settle", s.Load.Settle)
	if s.Load.SampleEvery != 0 {
		durRange("load.sample_every", s.Load.SampleEvery)
	}
	if s.Local.Load.Duration != 0 {
		durRange("local.load.duration", s.Local.Load.Duration)
	}
	durRange("local.load.warmup", s.Local.Load.Warmup)
	durRange("local.load.settle", s.Local.Load.Settle)
	qpsRange("local.client.qps", s.Local.Client.QPS)
	if s.Local.ServiceTime != 0 {
		durRange("local.service_time", s.Local.ServiceTime)
	}
	if s.Local.Client.Concurrency != 0 {
		intRange("local.client.concurrency", s.Local.Client.Concurrency)
	}
	if s.Local.Client.Connections != 0 {
		intRange("local.client.connections", s.Local.Client.Connections)
		if k, _ := LookupClient(s.Client.Kind); !k.Connections {
			bad("local.client.connections", fmt.Sprintf("client %s takes no connections (only %s do)", s.Client.Kind, strings.Join(clientNames(func(c ClientKind) bool { return c.Connections }), ", ")))
		}
	}
	checkDiagnosed(s.Diagnosed, bad, oneOf)
	checkCase(s.Case, bad)

	for _, spec := range Registry {
		for _, base := range []struct {
			prefix string
			k      *Knobs
		}{{"knobs.", &s.Knobs}, {"local.knobs.", &s.Local.Knobs}} {
			if err := spec.Check(base.k); err != nil {
				bad(base.prefix+spec.Path, err.Error())
			}
		}
	}
	checkEvents(s, bad)
	checkEastWest(s, bad, intRange, oneOf)
	// A window is the largest part of what a run costs, so each scenario says what sets its own:
	// the why names the window's length as a reader would write it ("4 s"), which keeps a
	// changed window from leaving an old reason behind.
	departs := !s.Local.Knobs.IsZero() || s.Local.Client != (LocalClient{}) || s.Local.Pool != (Pool{}) || len(s.Local.Events) > 0 || s.Local.ServiceTime != 0
	window, why := s.Local.Load.Duration, strings.TrimSpace(s.Local.Why)
	switch {
	case why == "" && departs:
		bad("local.why", "required when local departs from the lab's knobs, client, pool, events or service time: say why, it is shown in every report")
	case why == "" && window > 0:
		bad("local.why", fmt.Sprintf("required with local.load.duration (%s): say what sets the window, naming %q; it is shown in every report", window, windowWords(window)))
	case window > 0 && !strings.Contains(why, windowWords(window)):
		bad("local.why", fmt.Sprintf("say what sets the local window (local.load.duration %s): the text must name %q", window, windowWords(window)))
	}

	if al := s.Filters.AccessLog; al != nil {
		if len(al.ResponseFlags) == 0 {
			bad("filters.access_log.response_flags", "list at least one Envoy response flag (e.g. NR)")
		}
		for i, f := range al.ResponseFlags {
			oneOf(fmt.Sprintf("filters.access_log.response_flags[%d]", i), f, responseFlags)
		}
	}
	if j := s.Filters.JWT; j != nil {
		oneOf("filters.jwt.mode", j.Mode, jwtModes)
		if j.Issuer == "" {
			bad("filters.jwt.issuer", "missing: the issuer the gateway accepts")
		}
	}
	seenFeeds := map[Feed]bool{}
	for i, f := range s.Feeds {
		field := fmt.Sprintf("feeds[%d]", i)
		switch {
		case !feedPattern.MatchString(f.Call):
			bad(field+".call", fmt.Sprintf("%q: want the ID of a call of the evaluation (igwlab suite prints them), such as H-A or H-B h2dial", f.Call))
		case !rolePattern.MatchString(f.Role):
			bad(field+".role", fmt.Sprintf("%q: want the role the call's check names, in lower-case letters and dashes, such as control", f.Role))
		case seenFeeds[f]:
			bad(field, fmt.Sprintf("call %q role %q is listed twice", f.Call, f.Role))
		}
		seenFeeds[f] = true
	}
	intRange("requires.min_concurrency", s.Requires.MinConcurrency)
	seenTargets := map[string]bool{}
	for i, t := range s.Requires.Targets {
		field := fmt.Sprintf("requires.targets[%d]", i)
		oneOf(field, t, Targets)
		if seenTargets[t] {
			bad(field, fmt.Sprintf("%q is listed twice", t))
		}
		seenTargets[t] = true
	}
	if s.Control != "" && s.Control == s.Name {
		bad("control", "a scenario cannot be its own control")
	}
	return errs
}

// Load reads every *.yaml file in dir of fsys as a catalog. All files are checked, and every
// problem of every file is reported together.
func Load(fsys fs.FS, dir string) (*Catalog, error) { return load(fsys, dir, false) }

// checkControls checks each scenario's control: in the catalog (unless external, for a user's
// folder whose controls may be built-in ones, checked again after the merge) and driving the
// same client, so the pair differs only in knobs.
func (c *Catalog) checkControls(external bool) []error {
	var errs []error
	for _, s := range c.list {
		if s.Control == "" {
			continue
		}
		ctl, ok := c.byName[s.Control]
		if !ok {
			if !external {
				errs = append(errs, &FieldError{File: s.File, Field: "control", Msg: fmt.Sprintf("%q is not in the catalog", s.Control)})
			}
			continue
		}
		if ctl.Client.Kind != s.Client.Kind || ctl.Client.Mode != s.Client.Mode || ctl.Client.Concurrency != s.Client.Concurrency || ctl.Client.Path != s.Client.Path {
			errs = append(errs, &FieldError{File: s.File, Field: "control", Msg: fmt.Sprintf("%q must drive the same client, mode, concurrency and path", s.Control)})
		}
	}
	return errs
}

func load(fsys fs.FS, dir string, external bool) (*Catalog, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("reading catalog %s: %w", dir, err)
	}
	var errs []error
	cat := &Catalog{}
	byName := map[string]string{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		file := path.Join(dir, e.Name())
		data, err := fs.ReadFile(fsys, file)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", file, err))
			continue
		}
		s, err := ParseFile(file, data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if prev, dup := byName[s.Name]; dup {
			errs = append(errs, &FieldError{File: file, Field: "name", Msg: fmt.Sprintf("%q is already defined in %s", s.Name, prev)})
			continue
		}
		byName[s.Name] = file
		cat.add(s)
	}
	if len(errs) == 0 && len(cat.list) == 0 {
		errs = append(errs, fmt.Errorf("catalog %s holds no scenario files (*.yaml)", dir))
	}
	errs = append(errs, cat.checkControls(external)...)
	errs = append(errs, cat.checkFeeds()...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	cat.sort()
	return cat, nil
}

// windowWords is a window's length as the catalog's prose writes it: "4 s", "1.5 s".
func windowWords(d Duration) string {
	return strconv.FormatFloat(d.D().Seconds(), 'f', -1, 64) + " s"
}
