// Package docsection reads and rewrites a generated section of a docs page: the text between a
// line "<!-- NAME -->" and "<!-- end NAME -->". Numbers a page shows from a measurement live in
// such a section, written by the tool that measured them, so a test can hold the page to the
// file it came from instead of trusting numbers typed by hand.
package docsection

import (
	"bytes"
	"fmt"
	"os"
)

func markers(name string) (begin, end string) {
	return "<!-- " + name + " -->\n", "<!-- end " + name + " -->"
}

// find returns the body's span: from just after the begin line to the start of the end marker.
func find(page []byte, name string) (int, int, error) {
	begin, end := markers(name)
	i := bytes.Index(page, []byte(begin))
	if i < 0 {
		return 0, 0, fmt.Errorf("no %q line", begin[:len(begin)-1])
	}
	j := bytes.Index(page[i:], []byte(end))
	if j < 0 {
		return 0, 0, fmt.Errorf("no %q after %q", end, begin[:len(begin)-1])
	}
	return i + len(begin), i + j, nil
}

// Body is the section's text.
func Body(page []byte, name string) (string, error) {
	i, j, err := find(page, name)
	if err != nil {
		return "", err
	}
	return string(page[i:j]), nil
}

// Replace returns the page with the section's text set to body (which should end in a newline).
func Replace(page []byte, name, body string) ([]byte, error) {
	i, j, err := find(page, name)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(page)-(j-i)+len(body))
	out = append(out, page[:i]...)
	out = append(out, body...)
	return append(out, page[j:]...), nil
}

// BodyOf reads the section from the page at path.
func BodyOf(path, name string) (string, error) {
	page, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	b, err := Body(page, name)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// Write sets the section in the page at path, leaving the rest of the page as it is.
func Write(path, name, body string) error {
	page, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := Replace(page, name, body)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, out, 0o644)
}
