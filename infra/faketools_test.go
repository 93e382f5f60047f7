package infra

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/template"
)

// The k3d cluster script is tested by running it under bash with fake docker and k3d on PATH:
// this test binary, linked under those names, acting on a shared state file. They answer the
// way the real tools do (output formats read from docker's CLI and k3d v5.8.3's source: k3d
// logs INFO to stdout and fatal errors to stderr; `docker ps --format` takes Go templates with
// .Label) and record every call.

// fakeToolsEnv names the state file; set, this binary is a fake tool.
const fakeToolsEnv = "IGWLAB_FAKE_TOOLS_STATE"

// fakeState is the machine the fakes pretend to be.
type fakeState struct {
	DockerDown bool            `json:"docker_down"`
	K3dVersion string          `json:"k3d_version"`
	Containers []fakeContainer `json:"containers"`
	// The Docker VM (docker info; unset: 16 CPUs and 32 GiB, Docker 28.2.2) and whether the
	// buildx plugin is missing.
	NCPU          int    `json:"ncpu"`
	MemTotal      int64  `json:"mem_total"`
	ServerVersion string `json:"server_version"`
	NoBuildx      bool   `json:"no_buildx"`
}

type fakeContainer struct {
	Names   string            `json:"names"`
	Labels  map[string]string `json:"labels"`
	Ports   string            `json:"ports"`
	Stopped bool              `json:"stopped"`
}

// Label is docker ps's template function of the same name.
func (c fakeContainer) Label(k string) string { return c.Labels[k] }

// State is docker ps's container state.
func (c fakeContainer) State() string {
	if c.Stopped {
		return "exited"
	}
	return "running"
}

// dockerInfo is what docker info --format executes its template on.
type dockerInfo struct {
	NCPU          int
	MemTotal      int64
	ServerVersion string
}

func TestMain(m *testing.M) {
	if state := os.Getenv(fakeToolsEnv); state != "" {
		os.Exit(fakeTool(state, filepath.Base(os.Args[0]), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func fakeTool(statePath, tool string, args []string, stdout, stderr io.Writer) int {
	logf, err := os.OpenFile(statePath+".log", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		fmt.Fprintf(logf, "%s %s\n", tool, strings.Join(args, " "))
		logf.Close()
	}
	var st fakeState
	b, err := os.ReadFile(statePath)
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil {
		fmt.Fprintln(stderr, "fake tool state:", err)
		return 99
	}
	var code int
	switch tool {
	case "docker":
		code = fakeDocker(&st, args, stdout, stderr)
	case "k3d":
		code = fakeK3d(&st, args, stdout, stderr)
	default:
		fmt.Fprintln(stderr, "no fake for", tool)
		return 99
	}
	b, _ = json.Marshal(st)
	if err := os.WriteFile(statePath, b, 0o644); err != nil {
		return 99
	}
	return code
}

func fakeDocker(st *fakeState, args []string, stdout, stderr io.Writer) int {
	if st.DockerDown {
		fmt.Fprintln(stdout)
		fmt.Fprintln(stderr, "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?")
		return 1
	}
	if len(args) == 0 {
		return 2
	}
	switch args[0] {
	case "info":
		info := dockerInfo{NCPU: 16, MemTotal: 32 << 30, ServerVersion: "28.2.2"}
		if st.NCPU > 0 {
			info.NCPU = st.NCPU
		}
		if st.MemTotal > 0 {
			info.MemTotal = st.MemTotal
		}
		if st.ServerVersion != "" {
			info.ServerVersion = st.ServerVersion
		}
		format := "{{.ServerVersion}}"
		if len(args) == 3 && args[1] == "--format" {
			format = args[2]
		}
		tmpl, err := template.New("info").Parse(format)
		if err != nil || tmpl.Execute(stdout, info) != nil {
			fmt.Fprintln(stderr, "template parsing error:", err)
			return 1
		}
		fmt.Fprintln(stdout)
		return 0
	case "buildx":
		if st.NoBuildx {
			fmt.Fprintln(stderr, "docker: 'buildx' is not a docker command.")
			return 1
		}
		fmt.Fprintln(stdout, "github.com/docker/buildx v0.22.0 1a3e7d2")
		return 0
	case "ps":
		all, format := false, "{{.Names}}"
		var filters []string
		for i := 1; i < len(args); i++ {
			switch args[i] {
			case "-a", "--all":
				all = true
			case "--filter", "-f":
				i++
				filters = append(filters, args[i])
			case "--format":
				i++
				format = args[i]
			default:
				fmt.Fprintln(stderr, "fake docker ps: unsupported", args[i])
				return 2
			}
		}
		tmpl, err := template.New("ps").Parse(format)
		if err != nil {
			fmt.Fprintln(stderr, "template parsing error:", err)
			return 1
		}
		for _, c := range st.Containers {
			if (c.Stopped && !all) || !matchFilters(c, filters) {
				continue
			}
			if err := tmpl.Execute(stdout, c); err != nil {
				return 1
			}
			fmt.Fprintln(stdout)
		}
		return 0
	}
	fmt.Fprintln(stderr, "fake docker: unsupported", args)
	return 2
}

func matchFilters(c fakeContainer, filters []string) bool {
	for _, f := range filters {
		kv, ok := strings.CutPrefix(f, "label=")
		if !ok {
			return false
		}
		k, v, hasValue := strings.Cut(kv, "=")
		got, present := c.Labels[k]
		if !present || (hasValue && got != v) {
			return false
		}
	}
	return true
}

func fakeK3d(st *fakeState, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return 2
	}
	cmd := strings.Join(args[:min(2, len(args))], " ")
	switch {
	case args[0] == "version":
		fmt.Fprintf(stdout, "k3d version %s\nk3s version v1.31.5-k3s1 (default)\n", st.K3dVersion)
		return 0
	case cmd == "cluster create":
		return fakeK3dCreate(st, args[2:], stdout, stderr)
	case cmd == "cluster start":
		name := args[2]
		for i := range st.Containers {
			if st.Containers[i].Labels["k3d.cluster"] == name {
				st.Containers[i].Stopped = false
			}
		}
		fmt.Fprintf(stdout, "INFO[0000] Starting cluster '%s'\nINFO[0009] Started cluster '%s'\n", name, name)
		return 0
	case cmd == "cluster delete":
		name := args[2]
		st.Containers = slices.DeleteFunc(st.Containers, func(c fakeContainer) bool { return c.Labels["k3d.cluster"] == name })
		fmt.Fprintf(stdout, "INFO[0000] Deleting cluster '%s'\nINFO[0001] Successfully deleted cluster %s!\n", name, name)
		return 0
	case cmd == "kubeconfig get":
		name := args[2]
		if !slices.ContainsFunc(st.Containers, func(c fakeContainer) bool { return c.Labels["k3d.cluster"] == name }) {
			fmt.Fprintf(stderr, "FATA[0000] failed to get cluster '%s'\n", name)
			return 1
		}
		fmt.Fprintf(stdout, "apiVersion: v1\nkind: Config\ncurrent-context: k3d-%s\nusers:\n- name: admin@k3d-%s\n  user:\n    client-key-data: RkFLRS1BRE1JTi1LRVk=\n", name, name)
		return 0
	}
	fmt.Fprintln(stderr, "fake k3d: unsupported", args)
	return 2
}

func fakeK3dCreate(st *fakeState, args []string, stdout, stderr io.Writer) int {
	name := args[0]
	if slices.ContainsFunc(st.Containers, func(c fakeContainer) bool { return c.Labels["k3d.cluster"] == name }) {
		fmt.Fprintf(stderr, "FATA[0000] Failed to create cluster '%s' because a cluster with that name already exists\n", name)
		return 1
	}
	labels := map[string]string{}
	var ports []string
	agents := 0
	for i := 1; i < len(args); i++ {
		a := args[i]
		if strings.Contains(a, "=") || a == "--wait" {
			continue // --flag=value, or a boolean
		}
		if i+1 >= len(args) {
			fmt.Fprintln(stderr, "FATA[0000] flag needs an argument:", a)
			return 1
		}
		v := args[i+1]
		i++
		switch a {
		case "--runtime-label":
			kv, _, _ := strings.Cut(v, "@")
			k, val, _ := strings.Cut(kv, "=")
			if strings.HasPrefix(k, "k3d.") || strings.HasPrefix(k, "k3s.") {
				fmt.Fprintf(stderr, "FATA[0000] runtime label \"%s\" is reserved for internal usage\n", k)
				return 1
			}
			labels[k] = val
		case "--api-port":
			ports = append(ports, v+"->6443/tcp")
		case "-p", "--port":
			spec, _, _ := strings.Cut(v, "@")
			i := strings.LastIndex(spec, ":")
			ports = append(ports, spec[:i]+"->"+spec[i+1:]+"/tcp")
		case "--agents", "-a":
			fmt.Sscan(v, &agents)
		}
	}
	node := func(n, role string, extra map[string]string, ports string) fakeContainer {
		l := map[string]string{"k3d.cluster": name, "k3d.role": role}
		for k, v := range extra {
			l[k] = v
		}
		return fakeContainer{Names: "k3d-" + name + "-" + n, Labels: l, Ports: ports}
	}
	st.Containers = append(st.Containers, node("server-0", "server", labels, ""))
	for i := 0; i < agents; i++ {
		st.Containers = append(st.Containers, node(fmt.Sprintf("agent-%d", i), "agent", nil, ""))
	}
	st.Containers = append(st.Containers, node("serverlb", "loadbalancer", nil, strings.Join(ports, ", ")))
	fmt.Fprintf(stdout, "INFO[0000] Prep: Network\nINFO[0031] Cluster '%s' created successfully!\n", name)
	return 0
}
