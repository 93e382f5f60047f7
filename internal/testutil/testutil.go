// Package testutil holds what the lab's tests share: golden files rewritten with -update, a
// real HTTP/2 cleartext server on loopback, and a .tar.gz fixture unpacked into a temporary
// folder. Only tests import it.
package testutil

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/igwlab/igwlab/stacks"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"
)

var update = flag.Bool("update", false, "rewrite the golden files instead of comparing with them")

// Updating reports whether the test run was asked to rewrite its golden files (-update).
func Updating() bool { return *update }

// Golden compares got with the golden file at path, or writes it there with -update.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (rerun the test with -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs; rerun with -update if intended\n--- got\n%s", path, got)
	}
}

// H2C starts a real HTTP/2 server over cleartext (prior knowledge) on loopback, advertising
// maxStreams concurrent streams (0: the library's default), closed when the test ends.
func H2C(t testing.TB, maxStreams uint32, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h2c.NewHandler(h, &http2.Server{MaxConcurrentStreams: maxStreams}))
	t.Cleanup(srv.Close)
	return srv
}

// Untar unpacks a .tar.gz into a temporary folder and returns the folder.
func Untar(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(dir, filepath.FromSlash(h.Name))
		if target != dir && !strings.HasPrefix(target, dir+string(filepath.Separator)) {
			t.Fatalf("%s: entry %q leaves the folder", path, h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(target, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Scenario is a built-in catalog scenario, failing the test when there is none of that name.
func Scenario(t testing.TB, name string) *stacks.Scenario {
	t.Helper()
	cat, err := stacks.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := cat.MustGet(name)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// RealFixtures is the folder of admin outputs and EnvoyFilters other people published, which
// the tests read as input and never copy into the repository: $IGWLAB_REAL_FIXTURES, else
// ../shared/fixtures/real beside the repository. It skips the test, saying so, where the
// folder is absent.
func RealFixtures(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("IGWLAB_REAL_FIXTURES")
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			t.Skipf("real fixtures: %v", err)
		}
		dir = filepath.Join(root, "..", "shared", "fixtures", "real")
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Skipf("the published real fixtures are not here (%s, or $IGWLAB_REAL_FIXTURES): skipped", dir)
	}
	return dir
}

// RealFixture is one file of RealFixtures, skipping the test where it is absent.
func RealFixture(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(RealFixtures(t), name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("real fixture %s is not here: skipped", p)
	}
	return p
}

// repoRoot is the folder of the module's go.mod, walking up from the test's folder.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/igwlab/igwlab\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
