package workers

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/storage/screen"
)

// FuzzPlanExtraction feeds any reply to the extraction plan: it never
// panics, accounts for every memory (stored or dropped), stores at most
// MaxExtracted of the allowed types, and stores nothing the screen refuses.
func FuzzPlanExtraction(f *testing.F) {
	for _, s := range []string{
		`{"memories":[{"type":"decision","title":"Use WAL","content":"SQLite in WAL mode.","confidence":0.9}]}`,
		`{"memories":[{"type":"fact","title":"","content":"x","confidence":2}]}`,
		`{"memories":[{"type":"note","title":"t","content":"GITHUB_TOKEN=ghp_R8mK2xQ7vN4pL9sT3wY6zB1cF5hJ0dG8aE2u","confidence":0.5},{"type":"note","title":"t","content":"GITHUB_TOKEN=ghp_R8mK2xQ7vN4pL9sT3wY6zB1cF5hJ0dG8aE2u","confidence":0.5}]}`,
		`{"memories":[]}`,
	} {
		f.Add(s)
	}
	// The check stands in for the server's by the same rules' shape: it is
	// not under test here.
	check := func(typ, title, content string, c float64) error {
		if strings.TrimSpace(title) == "" || strings.TrimSpace(content) == "" || !(c > 0 && c <= 1) {
			return errCheck
		}
		return nil
	}
	p := extraction{OpID: "op-fuzz-1", Namespace: "global", Client: "claude-code"}
	f.Fuzz(func(t *testing.T, reply string) {
		var out struct {
			Memories []memory `json:"memories"`
		}
		if json.Unmarshal([]byte(reply), &out) != nil {
			return
		}
		plan := planExtraction(p, out.Memories, check)
		if len(plan.records)+len(plan.drops) != len(out.Memories) {
			t.Fatalf("%d stored + %d dropped of %d", len(plan.records), len(plan.drops), len(out.Memories))
		}
		if len(plan.records) > MaxExtracted {
			t.Fatalf("%d stored", len(plan.records))
		}
		for _, r := range plan.records {
			if !slices.Contains(ExtractTypes, r.Type) {
				t.Fatalf("stored type %q", r.Type)
			}
			if _, err := screen.Check("title", r.Title.String()); err != nil {
				t.Fatalf("stored a title the screen refuses: %v", err)
			}
			if _, err := screen.Check("content", r.Content.String()); err != nil {
				t.Fatalf("stored content the screen refuses: %v", err)
			}
		}
		for _, d := range plan.drops {
			if d.pattern == "" && d.reason == "" {
				t.Fatalf("a drop without a reason")
			}
		}
	})
}

var errCheck = checkError("invalid")

type checkError string

func (e checkError) Error() string { return string(e) }

// FuzzScreenReply: whatever a model replies, the receipt keeps text that
// passes the screen.
func FuzzScreenReply(f *testing.F) {
	for _, s := range []string{
		`{"memories":[{"type":"note","title":"t","content":"token ghp_R8mK2xQ7vN4pL9sT3wY6zB1cF5hJ0dG8aE2u"}]}`,
		`Sure! {"memories": [`, `{"ghp_R8mK2xQ7vN4pL9sT3wY6zB1cF5hJ0dG8aE2u":1}`, `["do-not-store"]`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := screen.Check("reply", screenReply(b).String()); err != nil {
			t.Fatalf("screenReply(%q) does not pass the screen: %v", b, err)
		}
	})
}
