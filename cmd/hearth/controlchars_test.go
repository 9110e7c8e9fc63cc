package main

import (
	"context"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/cmd/hearth/internal/hook"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
	"github.com/hearth-memory/hearth/storage/textcheck"
)

// TestText_ControlCharacters holds issue 41's ninth finding. Through REST,
// MCP and gRPC, a title, question or session id holding a control
// character (NUL, ESC, BEL, a line break) or a bidirectional override is
// refused naming the field, as is content holding one but tab and line
// breaks; and the hook folds such characters out of records stored before
// the rule, for both harnesses.
func TestText_ControlCharacters(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, testOptions())
	tok := td.tokens["claude-code"]
	const ns = "github/acme/api"
	id := store(t, td, ns, "note", "A record to update", "Plain.")
	bad := map[string]string{"NUL": "\x00", "ESC": "\x1b[2J", "BEL": "\a", "LF": "\n", "RLO": "\u202e", "LRI": "\u2066"}
	for _, tr := range transports(td) {
		for name, c := range bad {
			calls := []struct {
				tool, field string
				args        map[string]any
			}{
				{"memory_store", "title", storeArgs(ns, "Deploy "+c+"runbook", "Plain.")},
				{"memory_update", "changes.title", map[string]any{"id": id, "revision": 1, "changes": map[string]any{"title": "Deploy " + c}}},
				{"memory_question_add", "text", map[string]any{"namespace": ns, "text": "where is the deploy " + c + " runbook"}},
				{"memory_search", "session_id", map[string]any{"namespace": ns, "query": "deploy", "session_id": "s" + c}},
			}
			if name != "LF" {
				calls = append(calls, struct {
					tool, field string
					args        map[string]any
				}{"memory_store", "content", storeArgs(ns, "Deploy runbook", "Run it.\n"+c+"Then check.")})
			}
			for _, k := range calls {
				r := tr.call(t, tok, k.tool, k.args)
				if r.ok || r.code != "INVALID_ARGUMENT" || r.http != 400 || str(r.body, "error", "field") != k.field {
					t.Errorf("%s %s with %s: %v, want INVALID_ARGUMENT/400 naming %s", tr.name(), k.tool, name, r, k.field)
				}
			}
		}
		if r := tr.call(t, tok, "memory_store", storeArgs(ns, "Tabs and lines", "Step one:\tbuild.\r\nStep two: ship.")); !r.ok {
			t.Errorf("%s: content with tab and line breaks: %v, want stored", tr.name(), r)
		}
	}

	// A record stored before the rule, straight through storage.
	old, err := td.db.Store(context.Background(), storage.NewRecord{
		Namespace: ns, Type: storage.TypeConstraint, Title: storagetest.Text(t, "Old \x1b]0;pwned\a title \u202eexe.txt"),
		Content: storagetest.Text(t, "Old\x00 content."), Confidence: 0.9, Writer: "claude-code",
		Source: storage.SourceStore, Status: storage.StatusActive,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []hook.Harness{hook.ClaudeCode, hook.Codex} {
		e := newHookEnv(t, td, h, "")
		out := e.run(t, "session-start", map[string]any{"source": "startup"})
		ctx := contextOf(t, h, hook.EventSessionStart, out)
		if !strings.Contains(ctx, old.ID) {
			t.Fatalf("%s: the old record is not in the context:\n%s", h, ctx)
		}
		if r, i := textcheck.Find(out, true); i >= 0 {
			t.Errorf("%s: the hook's output holds U+%04X at %d: %q", h, r, i, out)
		}
		if r, i := textcheck.Find(ctx, true); i >= 0 {
			t.Errorf("%s: the context holds U+%04X at %d: %q", h, r, i, ctx)
		}
		if !strings.Contains(ctx, "Old \uFFFD]0;pwned\uFFFD title \uFFFDexe.txt") {
			t.Errorf("%s: the title is not folded to placeholders:\n%s", h, ctx)
		}
	}
}
