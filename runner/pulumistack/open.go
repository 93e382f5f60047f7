package pulumistack

import (
	"context"

	"github.com/igwlab/igwlab/infra"
)

// Opener opens a stack: Open, unless a test puts a fake in its place.
var Opener = Open

// OpenFor opens the lab's stack for a purpose. With a purpose ("up", "suite --target …") it
// first takes the stack's lock for this process, failing at once if another igwlab holds it;
// release frees it. Without one the stack is opened for reading only (its outputs, its config).
// The stack's project is the repository's Pulumi.yaml, unless o.Inline.
func OpenFor(ctx context.Context, o Options, purpose string) (st Stack, release func(), err error) {
	root, err := infra.RepoRoot()
	if err != nil && !o.Inline {
		return nil, nil, err
	}
	o.WorkDir = root
	release = func() {}
	if purpose != "" {
		dir := root
		if o.InlineDir != "" {
			dir = o.InlineDir
		}
		if release, err = Lock(dir, o.Name, purpose); err != nil {
			return nil, nil, err
		}
	}
	st, err = Opener(ctx, o)
	if err != nil {
		release()
		return nil, nil, err
	}
	return st, release, nil
}
