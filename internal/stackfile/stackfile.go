// Package stackfile reads a stack's configuration the way `pulumi config` shows it, from the
// files alone: the project's defaults in Pulumi.yaml (tracked, the lab's documented settings)
// under the stack's own Pulumi.<stack>.yaml (untracked: what `pulumi config set`, `igwlab up`
// and the suite write). No Pulumi CLI, login or backend is needed, so the doctor can report on
// a machine that has none, and nothing is created or changed.
package stackfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// Config is a stack's configuration, by full key ("igwlab:scenario").
type Config struct {
	// Values are the plain values, with the stack's over the project's defaults.
	Values map[string]string
	// Secure are the keys whose value is a secret (not readable here).
	Secure map[string]bool
	// From is, per key, the file its value comes from (Pulumi.yaml or Pulumi.<stack>.yaml).
	From map[string]string
	// StackFile is the stack's file, and StackFileExists whether it is there (a stack with no
	// file runs on the project's defaults alone).
	StackFile       string
	StackFileExists bool
	// Passphrase is whether the stack keeps its secrets with a passphrase (its file holds the
	// passphrase provider's salt).
	Passphrase bool
}

// Get returns a key's plain value and whether it is set at all.
func (c Config) Get(key string) (string, bool) {
	v, ok := c.Values[key]
	return v, ok || c.Secure[key]
}

// Path is where a stack's config lives in a project folder: Pulumi.<stack>.yaml (the last part
// of an org/project/stack name).
func Path(projectDir, stack string) string {
	return filepath.Join(projectDir, "Pulumi."+stack[strings.LastIndex(stack, "/")+1:]+".yaml")
}

// Read reads the project's Pulumi.yaml and the stack's file in projectDir.
func Read(projectDir, stack string) (Config, error) {
	c := Config{Values: map[string]string{}, Secure: map[string]bool{}, From: map[string]string{}, StackFile: Path(projectDir, stack)}
	project := filepath.Join(projectDir, "Pulumi.yaml")
	var proj struct {
		Name   string         `yaml:"name"`
		Config map[string]any `yaml:"config"`
	}
	if err := readYAML(project, &proj); err != nil {
		return c, err
	}
	for key, v := range proj.Config {
		full := key
		if !strings.Contains(key, ":") {
			full = proj.Name + ":" + key
		}
		// Shorthand (key: value) or a declaration with a default or a value.
		if m, ok := v.(map[string]any); ok {
			if d, ok := m["default"]; ok {
				v = d
			} else if d, ok := m["value"]; ok {
				v = d
			} else {
				continue
			}
		}
		if s, ok := scalar(v); ok {
			c.Values[full], c.From[full] = s, "Pulumi.yaml"
		}
	}
	var st struct {
		Salt   string         `yaml:"encryptionsalt"`
		Config map[string]any `yaml:"config"`
	}
	switch err := readYAML(c.StackFile, &st); {
	case errors.Is(err, fs.ErrNotExist):
		return c, nil
	case err != nil:
		return c, err
	}
	c.StackFileExists, c.Passphrase = true, st.Salt != ""
	base := filepath.Base(c.StackFile)
	for key, v := range st.Config {
		if m, ok := v.(map[string]any); ok {
			if _, secure := m["secure"]; secure {
				delete(c.Values, key)
				c.Secure[key], c.From[key] = true, base
			}
			continue
		}
		if s, ok := scalar(v); ok {
			c.Values[key], c.From[key] = s, base
			delete(c.Secure, key)
		}
	}
	return c, nil
}

func readYAML(path string, into any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// scalar is a YAML scalar as Pulumi's config holds it: text.
func scalar(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case bool, int, int64, float64:
		return fmt.Sprint(v), true
	}
	return "", false
}
