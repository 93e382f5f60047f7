package diagnose

import (
	"slices"
	"testing"
)

// TestParseAdminURLs: base URLs, and the page URLs igwlab serve prints for each pod, name the
// pods' admins.
func TestParseAdminURLs(t *testing.T) {
	got, err := ParseAdminURLs("http://127.0.0.2:34817/stats/prometheus, http://127.0.0.3:44721/,https://127.0.0.1:15000/config_dump?format=json,http://localhost:15000/proxy")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http://127.0.0.2:34817", "http://127.0.0.3:44721", "https://127.0.0.1:15000", "http://localhost:15000/proxy"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, bad := range []string{"", " , ", "127.0.0.1:15000", "ftp://127.0.0.1:15000", "http:///stats"} {
		if _, err := ParseAdminURLs(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
