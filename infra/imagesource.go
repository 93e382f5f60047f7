package infra

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
)

// H2dialDockerfile is the h2dial image's Dockerfile, relative to the repository root (the
// build context).
const H2dialDockerfile = "h2dial/Dockerfile"

// BuildStage is the first stage of a Dockerfile, read as far as the lab needs: what it copies
// from the build context and what it runs. The image tag hashes exactly the copied files, and
// a test replays the stage in an empty folder, so the two cannot drift apart.
type BuildStage struct {
	File string
	From string // the stage's base image
	// Platform is FROM's --platform ("$BUILDPLATFORM": the stage runs on the build machine's
	// own architecture and cross-compiles; "": on the target's, under emulation).
	Platform string
	Workdir  string   // absolute, inside the image
	Env      []string // KEY=VALUE, in order, build arguments expanded (PlatformArgs)
	Args     []string // the build arguments the stage declares (ARG)
	Copies   []Copy
	Runs     []string // shell commands, with RUN's own flags (--mount, --network) removed
}

// Copy is one COPY line: sources relative to the build context, and the destination.
type Copy struct {
	Sources []string
	Dest    string
}

// Sources lists every path the stage copies from the build context, in order.
func (b *BuildStage) Sources() []string {
	var out []string
	for _, c := range b.Copies {
		out = append(out, c.Sources...)
	}
	return out
}

// ParseBuildStage reads the first stage of a Dockerfile: FROM, WORKDIR, ENV, COPY and RUN
// (other instructions are kept out of the build's inputs and ignored). Line continuations and
// comments are handled; the JSON (exec) form of COPY and RUN is refused, as is COPY --from in
// the first stage, since neither is needed and both would make the replay lie.
func ParseBuildStage(path string) (*BuildStage, error) { return ParseBuildStageFor(path, PlatformArgs) }

// ParseBuildStageFor is ParseBuildStage with the platform build arguments of another build
// (a cross build: TARGETARCH another architecture than the machine's).
func ParseBuildStageFor(path string, platformArgs map[string]string) (*BuildStage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := &BuildStage{File: path, Workdir: "/"}
	var logical []string
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			cur.WriteString(strings.TrimSuffix(line, `\`) + " ")
			continue
		}
		cur.WriteString(line)
		logical = append(logical, cur.String())
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, line := range logical {
		instr, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		bad := func(why string) error { return fmt.Errorf("%s: %s: %s", path, line, why) }
		switch strings.ToUpper(instr) {
		case "FROM":
			if b.From != "" {
				return b, nil // the next stage starts: the build stage is complete
			}
			for _, f := range strings.Fields(rest) {
				if p, ok := strings.CutPrefix(f, "--platform="); ok {
					b.Platform = p
				} else if b.From == "" {
					b.From = f
				}
			}
		case "ARG":
			for _, f := range strings.Fields(rest) {
				name, _, _ := strings.Cut(f, "=")
				b.Args = append(b.Args, name)
			}
		case "WORKDIR":
			if !strings.HasPrefix(rest, "/") {
				rest = filepath.ToSlash(filepath.Join(b.Workdir, rest))
			}
			b.Workdir = rest
		case "ENV":
			fields := strings.Fields(rest)
			if len(fields) >= 2 && !strings.Contains(fields[0], "=") { // ENV KEY value
				fields = []string{fields[0] + "=" + strings.Join(fields[1:], " ")}
			}
			for _, kv := range fields {
				b.Env = append(b.Env, os.Expand(kv, func(v string) string {
					if slices.Contains(b.Args, v) {
						return platformArgs[v]
					}
					return "$" + v
				}))
			}
		case "COPY", "ADD":
			if strings.HasPrefix(rest, "[") {
				return nil, bad("the JSON form is not supported here")
			}
			args := stripFlags(strings.Fields(rest))
			if len(args) < 2 {
				return nil, bad("want at least a source and a destination")
			}
			if strings.Contains(rest, "--from") {
				return nil, bad("--from in the build stage is not supported here")
			}
			b.Copies = append(b.Copies, Copy{Sources: args[:len(args)-1], Dest: args[len(args)-1]})
		case "RUN":
			if strings.HasPrefix(rest, "[") {
				return nil, bad("the JSON form is not supported here")
			}
			b.Runs = append(b.Runs, strings.Join(stripFlags(strings.Fields(rest)), " "))
		}
	}
	if b.From == "" {
		return nil, fmt.Errorf("%s: no FROM", path)
	}
	return b, nil
}

// PlatformArgs are the platform build arguments BuildKit defines for a build on this machine
// for its own platform (docker build without --platform): the values a declared ARG of these
// names takes in the replay.
var PlatformArgs = map[string]string{
	"BUILDPLATFORM": runtime.GOOS + "/" + runtime.GOARCH, "BUILDOS": runtime.GOOS, "BUILDARCH": runtime.GOARCH,
	"TARGETPLATFORM": runtime.GOOS + "/" + runtime.GOARCH, "TARGETOS": runtime.GOOS, "TARGETARCH": runtime.GOARCH,
}

// stripFlags drops an instruction's leading --flags (RUN --mount=..., COPY --chmod=...).
func stripFlags(args []string) []string {
	for len(args) > 0 && strings.HasPrefix(args[0], "--") {
		args = args[1:]
	}
	return args
}

// imageSourceHash hashes the files a Dockerfile's build stage copies from the build context:
// the image tag changes exactly when the image's inputs do.
func imageSourceHash(root, dockerfile string) (string, error) {
	root = orDot(root)
	stage, err := ParseBuildStage(filepath.Join(root, dockerfile))
	if err != nil {
		return "", err
	}
	return sourceHash(root, append(stage.Sources(), dockerfile)...)
}

// sourceHash hashes the named files and folders (relative to root) in a stable order.
func sourceHash(root string, paths ...string) (string, error) {
	root = orDot(root)
	h := sha256.New()
	for _, p := range paths {
		var files []string
		err := filepath.WalkDir(filepath.Join(root, p), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
		sort.Strings(files)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return "", err
			}
			rel, _ := filepath.Rel(root, f)
			h.Write([]byte(filepath.ToSlash(rel)))
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
