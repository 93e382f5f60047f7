package stackfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Pulumi.yaml", `name: igwlab
runtime: go
config:
  igwlab:scenario: 02-trigger
  igwlab:hostPort: "18080"
  igwlab:verify: true
  proxyConcurrency:
    type: integer
    default: 1
  aws:region:
    value: eu-west-1
  igwlab:required:
    type: string
`)
	// A stack with no file of its own: the project's defaults.
	c, err := Read(dir, "lab")
	if err != nil {
		t.Fatal(err)
	}
	if c.StackFileExists || c.Passphrase || c.StackFile != filepath.Join(dir, "Pulumi.lab.yaml") {
		t.Errorf("no stack file: %+v", c)
	}
	for k, want := range map[string]string{"igwlab:scenario": "02-trigger", "igwlab:hostPort": "18080", "igwlab:verify": "true",
		"igwlab:proxyConcurrency": "1", "aws:region": "eu-west-1"} {
		if v, ok := c.Get(k); !ok || v != want || c.From[k] != "Pulumi.yaml" {
			t.Errorf("%s = %q (%v, from %s), want %q", k, v, ok, c.From[k], want)
		}
	}
	if _, ok := c.Get("igwlab:required"); ok {
		t.Error("a declared key without a default reads as set")
	}
	// The stack's own values win; a secure value is set, never readable here.
	write("Pulumi.lab.yaml", `encryptionsalt: v1:abc
config:
  igwlab:scenario: 04-mrpc
  igwlab:jwtKey:
    secure: v1:xyz
`)
	if c, err = Read(dir, "org/igwlab/lab"); err != nil {
		t.Fatal(err)
	}
	if v, _ := c.Get("igwlab:scenario"); v != "04-mrpc" || c.From["igwlab:scenario"] != "Pulumi.lab.yaml" {
		t.Errorf("scenario %q from %s", v, c.From["igwlab:scenario"])
	}
	if v, ok := c.Get("igwlab:jwtKey"); !ok || v != "" || !c.Secure["igwlab:jwtKey"] {
		t.Errorf("secret read as %q (%v)", v, ok)
	}
	if !c.StackFileExists || !c.Passphrase {
		t.Errorf("stack file %v, passphrase %v", c.StackFileExists, c.Passphrase)
	}
	write("Pulumi.bad.yaml", "config: [")
	if _, err := Read(dir, "bad"); err == nil {
		t.Error("a broken stack file reads")
	}
}
