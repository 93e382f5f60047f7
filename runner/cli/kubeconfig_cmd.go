package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/internal/atomicfile"
	"github.com/igwlab/igwlab/runner/cli/app"
	"github.com/igwlab/igwlab/runner/pulumistack"
)

// runKubeconfig puts the lab cluster's kubeconfig (a secret stack output) where kubectl finds it:
// merged into the default kubeconfig, or written to its own file with --out. It prints the
// context name (and the file), never the kubeconfig: it holds the cluster's admin key.
func kubeconfigCmd(e *app.Env) *cobra.Command {
	var sf app.StackFlags
	var out string
	c := app.Command("kubeconfig", "merge the lab cluster's kubeconfig into ~/.kube/config (or --out FILE) for kubectl; prints the context, never the key",
		func(cmd *cobra.Command) error { return runKubeconfig(cmd.Context(), &sf, out, e.Stdout, e.Stderr) })
	sf.Register(c.Flags())
	c.Flags().StringVar(&out, "out", "", "write the kubeconfig to this file (mode 0600) instead of merging it into the default one")
	return c
}

func runKubeconfig(ctx context.Context, sf *app.StackFlags, out string, stdout, stderr io.Writer) error {
	if err := sf.Check(); err != nil {
		return err
	}
	if sf.Kubeconfig != "" || sf.Context != "" {
		return app.Usagef("--kubeconfig/--context: kubeconfig writes the kubeconfig of the k3d cluster stack %s creates (a stack output); a cluster of your own is reached with the kubeconfig you gave the stack", sf.Name)
	}
	st, _, err := pulumistack.OpenFor(ctx, stackOptions(sf), "")
	if err != nil {
		return err
	}
	outs, err := st.Outputs(ctx)
	if err != nil {
		return err
	}
	kc, _ := outs["kubeconfig"].(string)
	if kc == "" {
		return fmt.Errorf("stack %s has no kubeconfig output: it is made for a %s cluster (igwlab:cluster %s) once pulumi up -s %s has run",
			sf.Name, infra.ClusterK3d, infra.ClusterK3d, sf.Name)
	}
	path, ctxName, err := writeKubeconfig([]byte(kc), out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "context %s written to %s\n", ctxName, path)
	fmt.Fprintf(stdout, "kubectl --kubeconfig %s --context %s get pods -A\n", path, ctxName)
	return nil
}

// writeKubeconfig writes the lab's kubeconfig to out, or merges it into the default kubeconfig
// (the first file of $KUBECONFIG, else ~/.kube/config) when out is empty: its cluster, user and
// context replace entries of the same names, everything else (and the current context) stays.
// It returns the file and the context name.
func writeKubeconfig(lab []byte, out string) (string, string, error) {
	cfg, err := clientcmd.Load(lab)
	if err != nil {
		return "", "", fmt.Errorf("the stack's kubeconfig: %w", err)
	}
	name := cfg.CurrentContext
	if _, ok := cfg.Contexts[name]; !ok {
		return "", "", fmt.Errorf("the stack's kubeconfig has no current context")
	}
	if out != "" {
		return out, name, writeConfigFile(cfg, out)
	}
	path, err := defaultKubeconfig()
	if err != nil {
		return "", "", err
	}
	into, err := clientcmd.LoadFromFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		into = clientcmdapi.NewConfig()
	case err != nil:
		return "", "", fmt.Errorf("%s: %w", path, err)
	}
	for k, v := range cfg.Clusters {
		into.Clusters[k] = v
	}
	for k, v := range cfg.AuthInfos {
		into.AuthInfos[k] = v
	}
	for k, v := range cfg.Contexts {
		into.Contexts[k] = v
	}
	if into.CurrentContext == "" {
		into.CurrentContext = name
	}
	return path, name, writeConfigFile(into, path)
}

// defaultKubeconfig is the file kubectl reads first: the first of $KUBECONFIG, else
// ~/.kube/config (looked up now: client-go's own default is fixed when the process starts).
func defaultKubeconfig() (string, error) {
	if list := filepath.SplitList(os.Getenv("KUBECONFIG")); len(list) > 0 && list[0] != "" {
		return list[0], nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no $KUBECONFIG and no home folder for ~/.kube/config: %w (use --out FILE)", err)
	}
	return filepath.Join(home, ".kube", "config"), nil
}

// writeConfigFile writes a kubeconfig readable by its owner only, replacing the file whole.
func writeConfigFile(cfg *clientcmdapi.Config, path string) error {
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	return atomicfile.WriteMode(path, b, 0o600)
}
