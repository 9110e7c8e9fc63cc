package screen

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestDocs checks that docs/screen.md says what the code enforces: every
// pattern, the upstream mapping and exclusions, the commands and the
// limits.
func TestDocs(t *testing.T) {
	prepare() // the rule table is built on first use
	b, err := os.ReadFile("../../docs/screen.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	section := func(title string) string {
		i := strings.Index(doc, "\n"+title+"\n")
		if i < 0 {
			t.Fatalf("docs/screen.md: got no %q section", title)
		}
		rest := doc[i+len(title)+2:]
		if j := strings.Index(rest, "\n#"); j >= 0 {
			rest = rest[:j]
		}
		return rest
	}
	t.Run("Patterns", func(t *testing.T) {
		table := section("## Patterns")
		for _, p := range Patterns() {
			if !strings.Contains(table, "`"+p+"`") {
				t.Errorf("pattern %s: got no mention in ## Patterns, want one", p)
			}
		}
	})
	t.Run("UpstreamNames", func(t *testing.T) {
		want := map[string][]string{}
		for _, r := range upstream.rules {
			want[r.name] = append(want[r.name], r.id)
		}
		got := map[string][]string{}
		for _, line := range strings.Split(section("### Names"), "\n") {
			cells := strings.Split(line, "|")
			if len(cells) != 4 || strings.TrimSpace(cells[1]) == "name" || strings.HasPrefix(strings.TrimSpace(cells[1]), "-") {
				continue
			}
			got[strings.TrimSpace(cells[1])] = strings.Split(strings.TrimSpace(cells[2]), ", ")
		}
		for name, ids := range want {
			slices.Sort(ids)
			if !slices.Equal(got[name], ids) {
				t.Errorf("name %s: got rules %v in the doc, want %v", name, got[name], ids)
			}
		}
		for name := range got {
			if want[name] == nil {
				t.Errorf("name %s: in the doc, but no rule maps to it", name)
			}
		}
	})
	t.Run("NotRun", func(t *testing.T) {
		notRun := section("### Not run")
		for _, r := range upstreamRules {
			_, excluded := upstreamExcluded[r.id]
			if (excluded || r.path != "" || r.regex == "") && !strings.Contains(notRun, "`"+r.id+"`") {
				t.Errorf("rule %s: not run, but missing from ### Not run", r.id)
			}
		}
	})
	t.Run("Commands", func(t *testing.T) {
		cli := strings.ToLower(section("## Command lines"))
		for _, n := range cliNameList {
			if !strings.Contains(cli, n) {
				t.Errorf("command %s: got no mention in ## Command lines, want one", n)
			}
		}
	})
	t.Run("Limits", func(t *testing.T) {
		for _, s := range []string{
			fmt.Sprintf("at most %d words and %d bytes of it are read", maxArgs, maxCommand),
			fmt.Sprintf("at most %d words are read", maxProseWords),
			fmt.Sprintf("shorter than %d characters", minSecret),
			fmt.Sprintf("at least %d characters mixing", minSecret),
		} {
			if !strings.Contains(strings.Join(strings.Fields(doc), " "), s) {
				t.Errorf("got no %q in docs/screen.md, want it", s)
			}
		}
	})
}

// TestDocs_PlaceholderWords holds docs/screen.md's lists of placeholder
// and dummy words to the code's.
func TestDocs_PlaceholderWords(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/screen.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	words := slices.Collect(maps.Keys(placeholderWords))
	words = append(words, dummyWords...)
	words = append(words, slices.Collect(maps.Keys(shortDummies))...)
	for _, w := range words {
		if !strings.Contains(doc, "`"+w+"`") {
			t.Errorf("placeholder word %q is not in docs/screen.md", w)
		}
	}
}
