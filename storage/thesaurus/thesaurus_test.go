package thesaurus

import (
	"strings"
	"testing"
)

// TestThesaurus_Groups: the embedded file parses (Parse's rules: lower-case
// entries of letters and digits, at least two per group, none twice in the
// file), and stays small.
func TestThesaurus_Groups(t *testing.T) {
	g, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(g) < 200 {
		t.Errorf("%d groups, want a general thesaurus of at least 200", len(g))
	}
	if len(data) > 64<<10 {
		t.Errorf("synonyms.txt is %d bytes; it is meant to stay small", len(data))
	}
	if got := Groups(); len(got) != len(g) || got[0][0] != g[0][0] {
		t.Errorf("Groups() differs from Parse(data)")
	}
	for _, group := range g {
		for _, e := range group {
			if e != strings.ToLower(e) {
				t.Errorf("%q is not lower-case", e)
			}
		}
	}
}

func TestThesaurus_Parse(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		g, err := Parse("# money\n\ninvoice, bill\n  k8s ,kubernetes  \npull request, pr\n")
		if err != nil {
			t.Fatal(err)
		}
		want := [][]string{{"invoice", "bill"}, {"k8s", "kubernetes"}, {"pull request", "pr"}}
		if len(g) != len(want) {
			t.Fatalf("got %q, want %q", g, want)
		}
		for i := range want {
			if strings.Join(g[i], "|") != strings.Join(want[i], "|") {
				t.Errorf("group %d: got %q, want %q", i, g[i], want[i])
			}
		}
	})
	for _, tt := range []struct {
		name, text, want string
	}{
		{"ErrOneEntry", "invoice\n", "line 1: a group needs at least two entries"},
		{"ErrUpperCase", "a, b\nInvoice, bill\n", `line 2: "Invoice" has 'I'`},
		{"ErrPunctuation", "ci/cd, pipeline\n", `has '/'`},
		{"ErrDoubleSpace", "pull  request, pr\n", "has a space that does not separate two words"},
		{"ErrEmpty", "bill, , invoice\n", `"" is empty`},
		{"ErrDuplicateInGroup", "bill, invoice, bill\n", `line 1: "bill" is already on line 1`},
		{"ErrInTwoGroups", "bill, invoice\n# x\nbill, check\n", `line 3: "bill" is already on line 1`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.text)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error with %q", err, tt.want)
			}
		})
	}
}
