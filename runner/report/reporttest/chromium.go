// Package reporttest opens a rendered report in headless Chromium, so tests can assert that the
// page a user opens actually renders, with every image decoded, and with no network at all.
package reporttest

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// Chromium returns the browser binary, skipping the test when there is none; under CI a missing
// browser is a failure, because .ci/run installs it.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium on PATH under CI (apt-get install chromium)")
	}
	t.Skip("no chromium on PATH (apt-get install chromium)")
	return ""
}

// flags keep the browser off the network and out of the machine's profile.
func flags(t testing.TB) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--no-first-run", "--no-default-browser-check", "--hide-scrollbars", "--mute-audio",
		"--user-data-dir=" + t.TempDir()}
}

var imagesAttr = regexp.MustCompile(`<body[^>]*data-images="(\d+)/(\d+)"`)

// AssertRenders loads the HTML file in headless Chromium and checks that the page's own load
// script reports every image decoded (and at least minImages of them), then takes a full-width
// screenshot and checks it is a real, non-blank PNG. It returns the screenshot's path.
func AssertRenders(t testing.TB, htmlPath string, minImages int) string {
	t.Helper()
	bin := Chromium(t)
	abs, err := filepath.Abs(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	url := "file://" + abs
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	dom, err := exec.CommandContext(ctx, bin, append(flags(t), "--virtual-time-budget=10000", "--dump-dom", url)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v", htmlPath, err)
	}
	m := imagesAttr.FindSubmatch(dom)
	if m == nil {
		t.Fatalf("%s: the page's load script did not run (no data-images on <body>)", htmlPath)
	}
	total, _ := strconv.Atoi(string(m[1]))
	loaded, _ := strconv.Atoi(string(m[2]))
	if total < minImages || loaded != total {
		t.Fatalf("%s: %d of %d images decoded, want all of at least %d", htmlPath, loaded, total, minImages)
	}

	shot := filepath.Join(t.TempDir(), "report.png")
	cmd := exec.CommandContext(ctx, bin, append(flags(t), "--window-size=1200,2400", "--screenshot="+shot, url)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	b := img.Bounds()
	if b.Dx() < 1000 || b.Dy() < 2000 {
		t.Fatalf("screenshot is %dx%d", b.Dx(), b.Dy())
	}
	// A blank page is one colour; a rendered report has text, tables and plots.
	colours := map[uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[r>>8<<16|g>>8<<8|bl>>8] = true
		}
	}
	if len(colours) < 16 {
		t.Fatalf("screenshot has %d colours: the page looks blank", len(colours))
	}
	return shot
}
