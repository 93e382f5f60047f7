package pulumistack

import (
	"context"
	"strings"

	"golang.org/x/mod/semver"
)

// MinCLI is the oldest Pulumi CLI the real lab supports: the first whose engine fails an
// update when an after-create or after-update resource hook fails (pulumi/pulumi#22935, in
// v3.238.0 per Pulumi's CHANGELOG). The lab's in-effect checks are such hooks
// (infra/verify.go); an older CLI only logs their failure as a warning (and CLIs before 3.182.0
// have no hooks), so an update whose scenario never took effect would look like a success.
const MinCLI = "3.238.0"

// HooksFailUpdates reports that a Pulumi CLI version ("3.274.1", "v3.274.1") fails an update on
// a failed after hook; an unreadable version is taken as not.
func HooksFailUpdates(version string) bool {
	v := "v" + strings.TrimPrefix(strings.TrimSpace(version), "v")
	return semver.IsValid(v) && semver.Compare(v, "v"+MinCLI) >= 0
}

func (a *autoStack) CLIVersion(context.Context) (string, error) {
	return a.s.Workspace().PulumiVersion(), nil
}
