package infra

import (
	"debug/elf"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// dockerfiles lists every Dockerfile in the repository, relative to its root.
func dockerfiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "results" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (d.Name() == "Dockerfile" || strings.HasSuffix(d.Name(), ".Dockerfile")) {
			rel, _ := filepath.Rel(root, path)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no Dockerfile found")
	}
	return out
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// builtPackage is a package a RUN line's go build builds (the last argument before && or the end).
var builtPackage = regexp.MustCompile(`go build [^&]*?(\./[^\s&]+)\s*(?:&&|$)`)

// absPath matches a path inside the image written as an absolute path in a RUN command.
var absPath = regexp.MustCompile(`(^|[\s=])(/[^\s"';&|]*)`)

// crossTarget is the build arguments of a build for the other of the lab's two architectures
// (arm64 on an amd64 machine, amd64 elsewhere), as docker buildx --platform linux/<arch> sets
// them, and that architecture's ELF machine.
func crossTarget() (map[string]string, elf.Machine) {
	arch, machine := "arm64", elf.EM_AARCH64
	if runtime.GOARCH == "arm64" {
		arch, machine = "amd64", elf.EM_X86_64
	}
	args := maps.Clone(PlatformArgs)
	args["TARGETPLATFORM"], args["TARGETOS"], args["TARGETARCH"] = "linux/"+arch, "linux", arch
	return args, machine
}

// TestDockerfileBuildsFromItsOwnContext replays each Dockerfile's build stage without Docker,
// as a cross build for the other architecture (what a Mac on Apple Silicon does for an amd64
// cluster): only the paths its COPY lines name are copied from the repository into an empty
// folder (standing in for the image's file system), and its RUN commands run there with the
// stage's ENV, absolute paths mapped into that folder. A package the build needs but the
// Dockerfile does not copy fails the build, as it would fail `docker build`; a stage that runs
// on the target's platform (under emulation, no FROM --platform=$BUILDPLATFORM) or builds for
// the build machine's architecture fails too. The module proxy and cache come from the
// environment; -mod=readonly keeps a missing go.sum entry an error.
func TestDockerfileBuildsFromItsOwnContext(t *testing.T) {
	root := repoRoot(t)
	target, machine := crossTarget()
	for _, df := range dockerfiles(t, root) {
		t.Run(df, func(t *testing.T) {
			stage, err := ParseBuildStageFor(filepath.Join(root, df), target)
			if err != nil {
				t.Fatal(err)
			}
			if stage.Platform != "$BUILDPLATFORM" {
				t.Errorf("%s: FROM --platform=%q: the build stage must run on $BUILDPLATFORM and cross-compile, not under emulation", df, stage.Platform)
			}
			img := t.TempDir()
			work := filepath.Join(img, filepath.FromSlash(stage.Workdir))
			for _, c := range stage.Copies {
				for _, src := range c.Sources {
					dest := c.Dest
					if !strings.HasPrefix(dest, "/") {
						dest = stage.Workdir + "/" + dest
					}
					to := filepath.Join(img, filepath.FromSlash(dest))
					if strings.HasSuffix(c.Dest, "/") && !strings.HasSuffix(src, "/") {
						to = filepath.Join(to, filepath.Base(src)) // COPY file dir/
					}
					copyTree(t, filepath.Join(root, filepath.FromSlash(src)), to)
				}
			}
			if err := os.MkdirAll(work, 0o755); err != nil {
				t.Fatal(err)
			}
			env := buildEnv(stage.Env)
			for _, run := range stage.Runs {
				mapped := absPath.ReplaceAllString(run, "${1}"+filepath.ToSlash(img)+"${2}")
				cmd := exec.Command("sh", "-c", mapped)
				cmd.Dir, cmd.Env = work, env
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%s: RUN %s\nfails in a folder holding only what the COPY lines copy (%v):\n%s", df, run, err, out)
				}
				for _, m := range builtBinary.FindAllStringSubmatch(run, -1) {
					f, err := elf.Open(filepath.Join(img, filepath.FromSlash(m[1])))
					if err != nil {
						t.Fatalf("%s: %s: %v", df, m[1], err)
					}
					if f.Machine != machine || f.OSABI != elf.ELFOSABI_NONE {
						t.Errorf("%s: %s is built for %v, want linux/%s's %v", df, m[1], f.Machine, target["TARGETARCH"], machine)
					}
					f.Close()
				}
			}
		})
	}
}

// builtBinary is the output path of a RUN line's go build -o.
var builtBinary = regexp.MustCompile(`go build [^&]*?-o (/\S+)`)

// buildEnv is this process's environment with the stage's ENV on top, the module mode pinned
// to readonly (a build must not add go.sum entries of its own) and no workspace file.
func buildEnv(stageEnv []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k == "GOFLAGS" || k == "GOWORK" || k == "GOTOOLCHAIN" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "GOFLAGS=-mod=readonly", "GOWORK=off")
	return append(env, stageEnv...)
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatalf("COPY %s: %v", from, err)
	}
}

// TestDockerfileCopiesEveryPackageItBuilds asks the go command which of the module's own
// packages the image's commands need and checks that the Dockerfile copies each of them, and
// that the image tag hashes exactly what the Dockerfile copies.
func TestDockerfileCopiesEveryPackageItBuilds(t *testing.T) {
	root := repoRoot(t)
	stage, err := ParseBuildStage(filepath.Join(root, H2dialDockerfile))
	if err != nil {
		t.Fatal(err)
	}
	var built []string
	for _, run := range stage.Runs {
		for _, m := range builtPackage.FindAllStringSubmatch(run, -1) {
			built = append(built, m[1])
		}
	}
	if !slices.Contains(built, "./h2dial/cmd/h2dial") || !slices.Contains(built, "./grpclab/cmd/igwlab-grpc") {
		t.Fatalf("%s builds %v, want h2dial's and igwlab-grpc's commands", H2dialDockerfile, built)
	}
	cmd := exec.Command("go", append([]string{"list", "-deps", "-f", "{{if .Module}}{{if .Module.Main}}{{.Dir}}{{end}}{{end}}"}, built...)...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	sources := stage.Sources()
	for _, dir := range strings.Fields(string(out)) {
		rel, _ := filepath.Rel(root, dir)
		rel = filepath.ToSlash(rel)
		if !slices.ContainsFunc(sources, func(s string) bool {
			s = strings.TrimSuffix(s, "/")
			return rel == s || strings.HasPrefix(rel, s+"/")
		}) {
			t.Errorf("%s: its commands need package %s, which no COPY line copies (COPY sources: %v)", H2dialDockerfile, rel, sources)
		}
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		if !slices.Contains(sources, f) {
			t.Errorf("%s does not copy %s", H2dialDockerfile, f)
		}
	}

	// The tag is the hash of the copied files: a new file in any copied folder changes it, a
	// file the Dockerfile does not copy does not (checked on a copy of the context).
	ctx := t.TempDir()
	for _, p := range append(sources, H2dialDockerfile) {
		copyTree(t, filepath.Join(root, filepath.FromSlash(p)), filepath.Join(ctx, filepath.FromSlash(p)))
	}
	hash := func() string {
		t.Helper()
		h, err := imageSourceHash(ctx, H2dialDockerfile)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	before := hash()
	writeProbe(t, filepath.Join(ctx, "README.md"))
	if hash() != before {
		t.Error("a file the Dockerfile does not copy changes the image tag")
	}
	for _, src := range sources {
		dir := filepath.Join(ctx, filepath.FromSlash(src))
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		writeProbe(t, filepath.Join(dir, "zz-probe.txt"))
		if after := hash(); after == before {
			t.Errorf("a new file in %s does not change the image tag", src)
		} else {
			before = after
		}
	}
}

func writeProbe(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("probe\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// goModToolchain is the Go toolchain go.mod asks for: its toolchain line, else its go line.
func goModToolchain(t *testing.T, root string) string {
	t.Helper()
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	want := ""
	for _, m := range goDirective.FindAllStringSubmatch(string(mod), -1) {
		if want == "" || m[1] == "toolchain" {
			want = m[2]
		}
	}
	return want
}

// goDirective matches go.mod's go and toolchain lines.
var goDirective = regexp.MustCompile(`(?m)^(go|toolchain)\s+(?:go)?(\d+\.\d+(?:\.\d+)?)\s*$`)

// TestDockerfileBuildImageMatchesGoMod pins each Dockerfile's Go image to the toolchain go.mod
// asks for (its toolchain line, else its go line): with GOTOOLCHAIN=local a floating tag
// older than that fails the build, and a newer one builds something the tests never ran.
func TestDockerfileBuildImageMatchesGoMod(t *testing.T) {
	root := repoRoot(t)
	want := goModToolchain(t, root)
	if strings.Count(want, ".") != 2 {
		t.Fatalf("go.mod names Go %q: want a full version (go 1.26.6) so the image can be pinned", want)
	}
	image := regexp.MustCompile(`^golang:` + regexp.QuoteMeta(want) + `(-[a-z0-9.]+)?(@sha256:[0-9a-f]{64})?$`)
	for _, df := range dockerfiles(t, root) {
		stage, err := ParseBuildStage(filepath.Join(root, df))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(stage.From, "golang:") {
			continue
		}
		if !image.MatchString(stage.From) {
			t.Errorf("%s: build image %s; go.mod needs Go %s: use golang:%s-alpine (optionally @sha256:...)", df, stage.From, want, want)
		}
		if !slices.Contains(stage.Env, "GOTOOLCHAIN=local") {
			t.Errorf("%s: without GOTOOLCHAIN=local the build may download another toolchain than the image's", df)
		}
	}
}

func TestParseBuildStage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "Dockerfile")
	src := "# syntax=docker/dockerfile:1\nFROM golang:1.26.6-alpine AS build\nWORKDIR /src\nENV A=1 B=2\nENV C three\n" +
		"COPY --chmod=644 go.mod go.sum ./\nCOPY x/ x/\nRUN --mount=type=cache,target=/go/pkg/mod \\\n    go build -o /out ./x\n" +
		"FROM scratch\nCOPY --from=build /out /out\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := ParseBuildStage(path)
	if err != nil {
		t.Fatal(err)
	}
	if b.From != "golang:1.26.6-alpine" || b.Workdir != "/src" {
		t.Errorf("from %q workdir %q", b.From, b.Workdir)
	}
	if got := strings.Join(b.Env, ","); got != "A=1,B=2,C=three" {
		t.Errorf("env %s", got)
	}
	if got := strings.Join(b.Sources(), ","); got != "go.mod,go.sum,x/" {
		t.Errorf("sources %s", got)
	}
	if len(b.Runs) != 1 || b.Runs[0] != "go build -o /out ./x" {
		t.Errorf("runs %q", b.Runs)
	}
	for _, bad := range []string{"FROM a\nCOPY [\"a\", \"b\"]\n", "FROM a\nRUN [\"sh\"]\n", "FROM a\nCOPY --from=x /a /b\n", "COPY a b\n"} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ParseBuildStage(path); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
