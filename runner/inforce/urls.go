package inforce

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/igwlab/igwlab/runner/stats"
)

// URLs is a pool of admins reached directly at their base URLs (http://127.0.0.1:15000):
// for users who reach their gateway pods' admins themselves, and for the tests, where the
// local emulator's pods stand in for them. Each pod is named by its URL's host and port.
type URLs []string

// ParseURLs reads a comma- or space-separated list of admin base URLs.
func ParseURLs(text string) (URLs, error) {
	var out URLs
	for _, f := range strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' }) {
		u, err := url.Parse(f)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return nil, fmt.Errorf("%q is not an admin base URL such as http://127.0.0.1:15000", f)
		}
		out = append(out, strings.TrimSuffix(f, "/"))
	}
	return out, nil
}

// Pods implements Pool.
func (u URLs) Pods(context.Context) ([]string, error) {
	out := make([]string, len(u))
	for i, s := range u {
		out[i] = strings.TrimPrefix(strings.TrimPrefix(s, "http://"), "https://")
	}
	return out, nil
}

// Admin implements Pool.
func (u URLs) Admin(ctx context.Context, pod, path string) ([]byte, error) {
	base := ""
	for _, s := range u {
		if strings.HasSuffix(s, "://"+pod) {
			base = s
		}
	}
	if base == "" {
		return nil, fmt.Errorf("no admin URL for %s", pod)
	}
	return stats.GetAdmin(ctx, http.DefaultClient, base, path)
}
