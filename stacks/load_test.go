package stacks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

const goodFile = `name: 99-mine
order: 500
client:
  kind: h2dial
  mode: shared
  concurrency: 50
  path: /get
load:
  duration: 10s
knobs:
  hcm:
    http2_protocol_options:
      max_concurrent_streams: 100
`

func TestParseFileGood(t *testing.T) {
	s, err := ParseFile("99-mine.yaml", []byte(goodFile))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := Registry[0].Get(&s.Knobs); !ok || v != "100" {
		t.Fatalf("max_concurrent_streams = %q, %v", v, ok)
	}
}

// TestParseFileBad feeds one broken file per case and checks that the error names the file,
// the line, the field and the allowed values.
func TestParseFileBad(t *testing.T) {
	cases := []struct {
		name string
		edit func(string) string
		want []string
	}{
		{"empty file", func(string) string { return "  \n" }, []string{"99-mine.yaml", "file is empty"}},
		{"not yaml", func(string) string { return "name: [unclosed\n" }, []string{"not valid YAML"}},
		{"misspelt knob", func(s string) string {
			return strings.Replace(s, "max_concurrent_streams", "max_concurent_streams", 1)
		}, []string{"99-mine.yaml:13", "knobs.hcm.http2_protocol_options.max_concurent_streams", "unknown field", `did you mean "max_concurrent_streams"`}},
		{"knob out of range", func(s string) string {
			return strings.Replace(s, "max_concurrent_streams: 100", "max_concurrent_streams: 0", 1)
		}, []string{"99-mine.yaml:13", "knobs.hcm.http2_protocol_options.max_concurrent_streams", "out of range", "1..2147483647"}},
		{"huge knob", func(s string) string {
			return strings.Replace(s, "max_concurrent_streams: 100", "max_concurrent_streams: 99999999999999999999", 1)
		}, []string{"max_concurrent_streams", "1..2147483647"}},
		{"negative knob", func(s string) string {
			return strings.Replace(s, "max_concurrent_streams: 100", "max_concurrent_streams: -5", 1)
		}, []string{"max_concurrent_streams", "out of range"}},
		{"window below minimum", func(s string) string {
			return strings.Replace(s, "max_concurrent_streams: 100", "initial_stream_window_size: 1024", 1)
		}, []string{"initial_stream_window_size", "65535..2147483647"}},
		{"knob of wrong type", func(s string) string {
			return strings.Replace(s, "max_concurrent_streams: 100", "max_concurrent_streams: lots", 1)
		}, []string{"max_concurrent_streams", `"lots" is out of range`}},
		{"bad duration knob", func(s string) string {
			return s + "    common_http_protocol_options:\n      max_connection_duration: soon\n"
		}, []string{"max_connection_duration", "not a duration"}},
		{"name mismatch", func(s string) string { return strings.Replace(s, "name: 99-mine", "name: 98-other", 1) },
			[]string{"99-mine.yaml:1", "name", "must equal the file name"}},
		{"unknown client", func(s string) string { return strings.Replace(s, "kind: h2dial", "kind: wrk", 1) },
			[]string{"client.kind", `"wrk" is not allowed`, "h2dial, fortio, grpc"}},
		{"bad mode", func(s string) string { return strings.Replace(s, "mode: shared", "mode: pooled", 1) },
			[]string{"client.mode", "shared, distinct"}},
		{"zero concurrency", func(s string) string { return strings.Replace(s, "concurrency: 50", "concurrency: 0", 1) },
			[]string{"client.concurrency", "1..20000"}},
		{"duration too short", func(s string) string { return strings.Replace(s, "duration: 10s", "duration: 10ms", 1) },
			[]string{"load.duration", "out of range"}},
		{"duplicate key", func(s string) string { return s + "order: 3\n" }, []string{"order", "duplicate key"}},
		{"unknown top-level", func(s string) string { return s + "knbos: {}\n" }, []string{"knbos", `did you mean "knobs"`}},
		{"local knobs without why", func(s string) string {
			return s + "local:\n  knobs:\n    hcm:\n      drain_timeout: 1s\n"
		}, []string{"local.why", "required"}},
		{"bad response flag", func(s string) string {
			return s + "filters:\n  access_log:\n    response_flags: [XX]\n"
		}, []string{"filters.access_log.response_flags[0]", "NR"}},
		{"string for a number", func(s string) string { return strings.Replace(s, "order: 500", "order: first", 1) },
			[]string{"order", "not a whole number"}},
		{"path without slash", func(s string) string { return strings.Replace(s, "path: /get", "path: get", 1) },
			[]string{"client.path", "must start with /"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseFile("99-mine.yaml", []byte(c.edit(goodFile)))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestLoadCatalogProblems(t *testing.T) {
	fsys := fstest.MapFS{
		"a.yaml": {Data: []byte(strings.Replace(goodFile, "99-mine", "a", 1))},
		"b.yaml": {Data: []byte(strings.Replace(goodFile, "99-mine", "b", 1) + "control: nope\n")},
	}
	_, err := Load(fsys, ".")
	if err == nil || !strings.Contains(err.Error(), `b.yaml: control: "nope" is not in the catalog`) {
		t.Fatalf("err = %v", err)
	}
}

func TestLoadDirMergesUserScenarios(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "99-mine.yaml"), []byte(goodFile), 0o644); err != nil {
		t.Fatal(err)
	}
	user, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	cat, _ := Builtin()
	merged, err := cat.Merge(user)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := merged.Get("99-mine"); !ok {
		t.Fatal("user scenario missing")
	}
	clash := strings.Replace(goodFile, "99-mine", "02-trigger", 1)
	if err := os.WriteFile(filepath.Join(dir, "99-mine.yaml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "02-trigger.yaml"), []byte(clash), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), "file is empty") {
		t.Fatalf("empty file accepted: %v", err)
	}
	os.Remove(filepath.Join(dir, "99-mine.yaml"))
	user, err = LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	// A user's scenario of a built-in's name takes its place, with a warning naming both files.
	merged, err = cat.Merge(user)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := merged.Get("02-trigger"); s == nil || !strings.HasPrefix(s.File, dir) {
		t.Fatalf("02-trigger is %+v, want the user's", s)
	}
	if len(merged.All()) != len(cat.All()) {
		t.Errorf("%d scenarios after replacing one of %d", len(merged.All()), len(cat.All()))
	}
	if w := strings.Join(merged.Warnings(), "\n"); !strings.Contains(w, "02-trigger.yaml: scenario 02-trigger takes the place of the one in stacks/02-trigger.yaml") {
		t.Errorf("warnings %q", w)
	}
}

func TestSelectPairsControl(t *testing.T) {
	cat, _ := Builtin()
	got, err := cat.Select([]string{"13-conn-balance"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "13-conn-balance-control" || got[1].Name != "13-conn-balance" {
		t.Fatalf("got %v", got)
	}
	if _, err := cat.Select([]string{"02-trigr"}, nil); err == nil || !strings.Contains(err.Error(), `did you mean "02-trigger"`) {
		t.Fatalf("err = %v", err)
	}
}

// TestOptionalScenariosRunOnlyByName: a default run leaves optional scenarios and their
// controls out; --only brings each one in with its control.
func TestOptionalScenariosRunOnlyByName(t *testing.T) {
	cat, _ := Builtin()
	all, err := cat.Select(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	inDefault := map[string]bool{}
	for _, s := range all {
		inDefault[s.Name] = true
	}
	optionalControl := map[string]bool{}
	for _, name := range cat.Names() {
		if s, _ := cat.Get(name); s.Optional && s.Control != "" {
			optionalControl[s.Control] = true
		}
	}
	optional := 0
	for _, name := range cat.Names() {
		s, _ := cat.Get(name)
		if !s.Optional {
			if !inDefault[name] && !optionalControl[name] {
				t.Errorf("%s is not optional but a default run leaves it out", name)
			}
			continue
		}
		optional++
		if inDefault[name] || (s.Control != "" && inDefault[s.Control]) {
			t.Errorf("a default run includes optional %s or its control", name)
		}
		got, err := cat.Select([]string{name}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got[len(got)-1].Name != name || (s.Control != "" && got[0].Name != s.Control) {
			t.Errorf("--only %s selects %v", name, got)
		}
	}
	if optional == 0 {
		t.Skip("the catalog has no optional scenario")
	}
}

func TestEffectiveLocalDepartures(t *testing.T) {
	cat, _ := Builtin()
	s, _ := cat.Get("04-fortio")
	lab, local := s.Lab(), s.WithLocal()
	spec, _ := Lookup("hcm.common_http_protocol_options.max_requests_per_connection")
	if v, _ := spec.Get(&lab.Knobs); v != "10000" {
		t.Fatalf("lab mrpc %s", v)
	}
	if v, _ := spec.Get(&local.Knobs); v != "150" {
		t.Fatalf("local mrpc %s", v)
	}
	if v, _ := Registry[0].Get(&local.Knobs); v != "65536" {
		t.Fatalf("local overlay lost mcs: %s", v)
	}
	deps := s.Departures()
	found := false
	for _, d := range deps {
		if d.Field == "knobs."+spec.Path && d.Lab == "10000" && d.Local == "150" {
			found = true
		}
	}
	if !found {
		t.Fatalf("departures %+v", deps)
	}
}

func TestRegistryPathsResolve(t *testing.T) {
	for _, s := range Registry {
		var k Knobs
		probe := map[KnobType]string{Uint32: "70000", DurationKnob: "1s", Bool: "true", Presence: "{}"}[s.Type]
		if err := s.Set(&k, probe); err != nil {
			t.Errorf("%s: %v", s.Path, err)
		}
		if _, ok := s.Get(&k); !ok {
			t.Errorf("%s: not readable after set", s.Path)
		}
	}
}

// TestUserScenarioMayNameABuiltinControl: a user's scenario paired with a built-in control
// loads and merges; the pair must still drive the same client, and a control in neither
// catalog is refused at the merge, naming the file.
func TestUserScenarioMayNameABuiltinControl(t *testing.T) {
	const tuned = `name: 99-tuned
order: 990
client:
  kind: h2dial
  mode: shared
  concurrency: 500
  path: /bytes/16384
load:
  duration: 10s
knobs:
  hcm:
    http2_protocol_options:
      max_concurrent_streams: 50
`
	cat, _ := Builtin()
	for _, tc := range []struct {
		control, client, want string
	}{
		{"02-trigger", "", ""},
		{"02-trigger", "concurrency: 50", `"02-trigger" must drive the same client`},
		{"77-nowhere", "", `99-tuned.yaml: control: "77-nowhere" is not in the catalog`},
	} {
		dir := t.TempDir()
		body := tuned + "control: " + tc.control + "\n"
		if tc.client != "" {
			body = strings.Replace(body, "concurrency: 500", tc.client, 1)
		}
		if err := os.WriteFile(filepath.Join(dir, "99-tuned.yaml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		user, err := LoadDir(dir)
		if err == nil {
			_, err = cat.Merge(user)
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("control %s: %v", tc.control, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("control %s, %s: %v, want %q", tc.control, tc.client, err, tc.want)
		}
	}
}
