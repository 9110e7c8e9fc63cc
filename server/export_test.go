package server

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
)

// FuzzParseLine feeds arbitrary lines to memory_import's line parser: it
// never panics; an accepted line holds every limit a store holds and
// carries only screened text; a refusal's message never carries a value
// the screen refuses (a decoder may quote the line).
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		`{"namespace":"github/acme/api","type":"decision","title":"t","content":"c"}`,
		`{"id":"01JD3M5ZK9Q8W7E6R5T4Y3X2V1","namespace":"global","type":"note","title":"t","content":"c","status":"superseded","revision":4,"writer":"codex","source":"store","superseded_by":"01JD3M5ZK9Q8W7E6R5T4Y3X2V2","topics":["a"],"anchors":[{"anchor":"path:a.go","state":"unavailable","checked_at":"2026-11-01T00:00:00Z","checked_by":"codex"}],"evidence":[{"client":"qa","stance":"contradicts","note":"n","at":"2026-11-02T00:00:00Z"}],"created_at":"2026-10-01T00:00:00Z"}`,
		`{"namespace":"global","type":"note","title":"t","content":"ghp_R8mK2xQ7vN4pL9sT3wY6zB1cF5hJ0dG8aE2u"}`,
		`{"ghp_R8mK2xQ7vN4pL9sT3wY6zB1cF5hJ0dG8aE2u":1}`,
		`{"namespace":"global","type":"note","title":"AKIAQX7WZJ3N5R2T4V6Y","content":1}`,
		`{"anchors":[{"anchor":"url:https://u:p@x.y/"}]}`,
		`[]`, `null`, `{`, "\xff",
	} {
		f.Add(s)
	}
	a := &adminService{Server: &Server{size: testSizer(f)}}
	f.Fuzz(func(t *testing.T, line string) {
		it, err := a.parseLine(line)
		if err != nil {
			fail := lineFailure(1, err)
			if _, serr := screen.Check("message", fail.GetMessage()); serr != nil {
				t.Fatalf("the refusal of %q carries a secret: %q", line, fail.GetMessage())
			}
			return
		}
		switch {
		case it.Title.String() == "" || it.Content.String() == "":
			t.Fatalf("accepted an empty title or content: %q", line)
		case len(it.Content.String()) > maxContentBytes || utf8.RuneCountInString(it.Title.String()) > maxTitleChars:
			t.Fatalf("accepted an oversized record: %q", line)
		case !storage.ValidType(it.Type) || it.Confidence <= 0 || it.Confidence > 1:
			t.Fatalf("accepted a bad type or confidence: %q", line)
		case it.Status != storage.StatusActive && it.Status != storage.StatusCandidate && it.Status != storage.StatusSuperseded:
			t.Fatalf("accepted status %q", it.Status)
		case len(it.Anchors) > maxAnchors:
			t.Fatalf("accepted %d anchors", len(it.Anchors))
		}
		for _, s := range []string{it.Title.String(), it.Content.String(), it.Namespace, it.Writer} {
			if _, err := screen.Check("x", s); err != nil {
				t.Fatalf("accepted a value the screen refuses: %q", line)
			}
		}
		if strings.ContainsRune(it.Namespace, ' ') {
			t.Fatalf("accepted namespace %q", it.Namespace)
		}
	})
}

// TestParseLine_RecordRules: a line breaking a rule storage owns (docs/design.md
// R-R8) is reported by memory_import with the field and the message a store
// gives, whichever side checks it.
func TestParseLine_RecordRules(t *testing.T) {
	t.Parallel()
	a := &adminService{Server: &Server{size: testSizer(t)}}
	const ok = `"namespace":"global","title":"t","content":"c"`
	for _, c := range []struct{ line, field, msg string }{
		{`{` + ok + `,"type":"fact"}`, "type", "must be decision, constraint, requirement, procedure, preference, note or summary"},
		{`{` + ok + `,"type":"note","status":"deleted"}`, "status", "must be active, candidate or superseded"},
		{`{` + ok + `,"type":"note","source":"paste"}`, "source", "must be one of store, extraction, import, session, capture"},
		{`{` + ok + `,"type":"note","confidence":2}`, "confidence", "must be above 0 and at most 1"},
		{`{` + ok + `,"type":"note","evidence":[{"client":"qa","stance":"agrees"}]}`, "evidence[0].stance", "must be corroborates or contradicts"},
		{`{"namespace":"global","type":"note","title":" ","content":"c"}`, "title", "is required"},
	} {
		_, err := a.parseLine(c.line)
		if err == nil {
			t.Errorf("%s: accepted", c.line)
			continue
		}
		if f := lineFailure(1, err); f.GetField() != c.field || f.GetMessage() != c.msg {
			t.Errorf("%s: field %q message %q, want %q %q", c.line, f.GetField(), f.GetMessage(), c.field, c.msg)
		}
	}
}
