package docsection

import (
	"strings"
	"testing"
)

func TestReplaceKeepsTheRestOfThePage(t *testing.T) {
	page := "# Title\n\ntext\n<!-- times -->\nold\nrows\n<!-- end times -->\nafter\n"
	out, err := Replace([]byte(page), "times", "new\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Title\n\ntext\n<!-- times -->\nnew\n<!-- end times -->\nafter\n"
	if string(out) != want {
		t.Errorf("got %q, want %q", out, want)
	}
	body, err := Body(out, "times")
	if err != nil || body != "new\n" {
		t.Errorf("Body = %q, %v", body, err)
	}
}

func TestMissingMarkersAreNamed(t *testing.T) {
	for _, tc := range []struct{ page, want string }{
		{"no markers\n", `no "<!-- times -->" line`},
		{"<!-- times -->\nbody\n", `no "<!-- end times -->" after`},
		{"<!-- end times -->\n<!-- times -->\n", `no "<!-- end times -->" after`},
	} {
		_, err := Replace([]byte(tc.page), "times", "x\n")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.page, err, tc.want)
		}
	}
}
