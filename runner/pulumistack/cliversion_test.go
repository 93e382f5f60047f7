package pulumistack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The real lab's page names the oldest Pulumi CLI whose updates fail on a failed check, MinCLI.
func TestREADMENamesTheMinimumPulumiCLI(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "real-lab.md"))
	if err != nil {
		t.Fatal(err)
	}
	if s := strings.Join(strings.Fields(string(b)), " "); !strings.Contains(s, "the Pulumi CLI "+MinCLI+" or later") {
		t.Errorf("docs/real-lab.md does not name the Pulumi CLI %s or later among the real lab's prerequisites", MinCLI)
	}
}
