package infra

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docSection is a document's text from a heading or bold lead-in to the next "## " heading
// (file relative to the repository root).
func docSection(t *testing.T, file, start string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), filepath.FromSlash(file)))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, start)
	if i < 0 {
		t.Fatalf("%s has no %q", file, start)
	}
	s = s[i+len(start):]
	if j := strings.Index(s, "\n## "); j >= 0 {
		s = s[:j]
	}
	return s
}

// The real lab's prerequisites (docs/real-lab.md) name every tool its steps run and the versions the repository
// needs: Go as go.mod names it, make (make build) and kubectl (the README's own commands).
func TestRealLabPrerequisitesNameWhatTheStepsUse(t *testing.T) {
	lab := docSection(t, "docs/real-lab.md", "## The real lab: `pulumi up -s lab`")
	i := strings.Index(lab, "it needs")
	j := strings.Index(lab, "From a clone")
	if i < 0 || j < i {
		t.Fatal(`the real lab section has no "it needs ... From a clone" prerequisites`)
	}
	prereq := strings.Join(strings.Fields(lab[i:j]), " ")
	goVersion := goModToolchain(t, repoRoot(t))
	for _, want := range []string{"Docker", "k3d (5.8 or later)", "bash", "make", "kubectl", "Go " + goVersion} {
		if !strings.Contains(prereq, want) {
			t.Errorf("the real lab's prerequisites (%q) do not name %q", prereq, want)
		}
	}
	if !strings.Contains(docSection(t, "README.md", "# igwlab"), "Go "+goVersion) {
		t.Errorf("the README's opening names another Go than go.mod's %s", goVersion)
	}
}

// "Without internet access" says plainly what still needs the network: every image the
// program pins, the Pulumi plugins and the Go modules; and its folder is one a user can write.
func TestOfflineSectionNamesWhatStillNeedsTheNetwork(t *testing.T) {
	s := strings.Join(strings.Fields(docSection(t, "docs/real-lab.md", "**Without internet access**")), " ")
	want := []string{"pulumi-resource-kubernetes", "pulumi-resource-command", "Go module", "golang", "k3s",
		"pilot", "proxyv2", "install-cni", "ztunnel", "kube-prometheus-stack"}
	for _, image := range PublicImages() {
		repo := imageRepo(image)
		want = append(want, repo[strings.LastIndex(repo, "/")+1:])
	}
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("the offline section does not say that %s needs the network", w)
		}
	}
	if strings.Contains(s, "/srv/") {
		t.Error("the offline section suggests a folder under /srv, which needs root on Linux and does not exist on macOS")
	}
}
