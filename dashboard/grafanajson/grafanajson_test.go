package grafanajson

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/igwlab/igwlab/dashboard"
)

var update = flag.Bool("update", false, "rewrite the golden dashboard")

func TestGoldenDashboard(t *testing.T) {
	got, err := JSON()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "igw-thread-concentration.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./dashboard -update)", err)
	}
	if string(got) != string(want) {
		t.Errorf("dashboard differs from %s; rerun with -update if intended", path)
	}
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(got, &d); err != nil || d.UID != dashboard.UID || len(d.Panels) != len(dashboard.Panels) {
		t.Fatalf("dashboard JSON: %v, uid %q, %d panels", err, d.UID, len(d.Panels))
	}
}
