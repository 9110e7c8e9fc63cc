package servertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
)

// SecretGitHub is a made-up GitHub token of the right shape: the screen
// refuses it wherever a client sends it.
const SecretGitHub = "ghp_R8mK2xQ7vN4pL9sT3wY6zB1cF5hJ0dG8aE2u"

// AnchoredArgs are memory_store's arguments for a decision with anchors.
func AnchoredArgs(ns, title, content string, anchors ...string) map[string]any {
	args := StoreArgs(ns, title, content)
	args["anchors"] = anchors
	return args
}

// Must fails the test unless r succeeded, and returns its body.
func Must(tb testing.TB, what string, r Result) map[string]any {
	tb.Helper()
	if !r.OK {
		tb.Fatalf("%s: %v", what, r)
	}
	return r.Body
}

// AwaitAnswer polls memory_answer over rest for the question text in ns
// until the worker has answered it, and returns the answer. db is the
// server's store, whose recorded questions it writes first.
func AwaitAnswer(tb testing.TB, db *storage.DB, rest REST, tok, ns, text string) map[string]any {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := db.FlushAsks(context.Background()); err != nil {
			tb.Fatal(err)
		}
		r := rest.Call(tb, tok, "memory_answer", map[string]any{"namespace": ns, "text": text})
		if a, ok := r.Body["answer"].(map[string]any); ok && r.OK && a["stale"] != true {
			return a
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no fresh answer to %q within 20 s: %v", text, r)
		}
		time.Sleep(20 * time.Millisecond) // polling the worker's idle poll
	}
}

// SeedReceipt stores an extraction receipt of a close in ns, as an
// extraction without a model server cannot, once per store, and returns
// its id.
func SeedReceipt(tb testing.TB, db *storage.DB, ns string) string {
	tb.Helper()
	rs, err := db.ExtractionReceipts(tb.Context(), "", 1)
	if err != nil {
		tb.Fatal(err)
	}
	if len(rs) > 0 {
		return rs[0].ID
	}
	input := fmt.Sprintf(`{"client":"claude-code","namespace":%q,"notes":"We chose WAL.","op_id":"seed-1","session_id":"s-1","summary":""}`, ns)
	id, err := db.StoreExtractionReceipt(tb.Context(), storage.NewExtractionReceipt{
		JobID: "01JD3M5ZK9Q8W7E6R5T4Y3X2V1", Namespace: ns, Client: "claude-code", Outcome: storage.ReceiptUnparsable,
		Server: "http://127.0.0.1:1", Model: "m1", Input: screen.Redact(input), Reply: screen.Redact(`{"memories": [`),
		Error: screen.Redact("reply is not JSON"),
	})
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

// AnchorState returns the state of anchor in a record's JSON.
func AnchorState(rec any, anchor string) map[string]any {
	for _, a := range List(rec, "anchors") {
		if Str(a, "anchor") == anchor {
			return a.(map[string]any)
		}
	}
	return nil
}

// AuditEntries returns the store's audit rows of action, newest first.
func AuditEntries(tb testing.TB, db *storage.DB, action storage.Action) []storage.AuditEntry {
	tb.Helper()
	all, err := db.AuditLog(context.Background(), 1000)
	if err != nil {
		tb.Fatal(err)
	}
	var out []storage.AuditEntry
	for _, e := range all {
		if e.Action == action {
			out = append(out, e)
		}
	}
	return out
}

// AuditRows counts the audit rows of action for record id.
func AuditRows(tb testing.TB, db *storage.DB, action storage.Action, id string) int {
	tb.Helper()
	n := 0
	for _, e := range AuditEntries(tb, db, action) {
		if e.RecordID == id {
			n++
		}
	}
	return n
}

// QuestionIn returns the question of memory_questions (over rest) in ns
// with the text, once db has written the recorded questions.
func QuestionIn(tb testing.TB, db *storage.DB, rest REST, tok, ns, text string) map[string]any {
	tb.Helper()
	if err := db.FlushAsks(context.Background()); err != nil {
		tb.Fatal(err)
	}
	r := rest.Call(tb, tok, "memory_questions", map[string]any{"namespace": ns, "limit": 50})
	if !r.OK {
		tb.Fatalf("memory_questions: %v", r)
	}
	qs, _ := r.Body["questions"].([]any)
	for _, q := range qs {
		if Str(q, "text") == text {
			return q.(map[string]any)
		}
	}
	tb.Fatalf("no question %q in %s", text, r.Raw)
	return nil
}
