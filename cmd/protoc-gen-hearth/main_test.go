package main

import "testing"

// TestClean: a comment's paragraphs stay apart, each on one line; a
// comment opening with a blank line has an empty first paragraph (no MCP
// description).
func TestClean(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{" One line.\n", "One line."},
		{" First\n paragraph.\n\n Second\n one.\n", "First paragraph.\n\nSecond one."},
		{"\n Only for API readers.\n", "\n\nOnly for API readers."},
		{"", ""},
	} {
		if got := clean(c.in); got != c.want {
			t.Errorf("clean(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
