package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/ncruces/go-sqlite3/driver"

	"github.com/hearth-memory/hearth/server/models/modeltest"
	"github.com/hearth-memory/hearth/server/options"
)

// question returns the question of memory_questions in ns with the text.
func questionIn(tb testing.TB, td *testDaemon, tok, ns, text string) map[string]any {
	tb.Helper()
	if err := td.db.FlushAsks(context.Background()); err != nil {
		tb.Fatal(err)
	}
	r := restTransport{td}.call(tb, tok, "memory_questions", map[string]any{"namespace": ns, "limit": 50})
	if !r.ok {
		tb.Fatalf("memory_questions: %v", r)
	}
	qs, _ := r.body["questions"].([]any)
	for _, q := range qs {
		if str(q, "text") == text {
			return q.(map[string]any)
		}
	}
	tb.Fatalf("no question %q in %s", text, r.raw)
	return nil
}

// answerModel starts an Ollama test server for o whose rule answers with
// the first sentence of the first record it was given, citing it.
func answerModel(t *testing.T, o *options.Options) (*modeltest.Server, modeltest.Rule) {
	srv := modeltest.New(t, modeltest.Ollama, modeltest.Model{Name: o.OllamaModel})
	fence := regexp.MustCompile(`<<<DATA ([0-9A-Z]{26})>>>\n([^\n]*)\n([^.]*\.)`)
	rule := modeltest.Rule{Path: "/api/chat", Action: modeltest.Action{Reply: func(c modeltest.Chat) string {
		m := fence.FindStringSubmatch(c.Messages[len(c.Messages)-1].Content)
		if m == nil {
			return `{"sentences": []}`
		}
		b, _ := json.Marshal(map[string]any{"sentences": []map[string]any{{"text": m[3], "source_ids": []string{m[1]}}}})
		return string(b)
	}}}
	srv.Script(rule)
	o.OllamaURL = srv.URL
	return srv, rule
}

// TestAnswer_EndToEnd holds R-W1..R-W7 through the daemon over REST, MCP
// and gRPC: searches are recorded per session (never recall searches or
// secret queries), a get in the same session counts as use, demand follows,
// the worker answers with the model, memory_answer reads the answer and
// its staleness, and memory_question_add declares.
func TestAnswer_EndToEnd(t *testing.T) {
	o := testOptions()
	srv, firstSentence := answerModel(t, &o)
	td := startDaemon(t, o)
	tok := td.tokens["claude-code"]
	rest := restTransport{td}
	const ns = "github/acme/answers"
	stored := rest.call(t, tok, "memory_store", storeArgs(ns, "Migrations", "Run make migrate before deploying. CI runs them on a scratch database."))
	if !stored.ok {
		t.Fatal(stored)
	}
	srcID := str(stored.body, "record", "id")

	// One search per transport, each in its own session.
	for _, tr := range transports(td) {
		r := tr.call(t, tok, "memory_search", map[string]any{"namespace": ns, "query": "How do we run the migrations?", "session_id": "s-" + tr.name()})
		if !r.ok {
			t.Fatalf("%s search: %v", tr.name(), r)
		}
	}
	// Neither a recall search nor a secret query is recorded.
	for _, args := range []map[string]any{
		{"namespace": ns, "query": "running migrations", "recall": true, "session_id": "s-recall"},
		{"namespace": ns, "query": "migrations with " + secretGitHub, "session_id": "s-secret"},
	} {
		if r := rest.call(t, tok, "memory_search", args); !r.ok {
			t.Fatal(r)
		}
	}
	// A get of a hit in the REST search's session: that ask was used.
	if r := rest.call(t, tok, "memory_get", map[string]any{"ids": []string{srcID}, "session_id": "s-rest"}); !r.ok {
		t.Fatal(r)
	}
	q := questionIn(t, td, tok, ns, "How do we run the migrations?")
	if num(q, "asks") != 3 || num(q, "sessions") != 3 || num(q, "clients") != 1 || num(q, "used") != 1 ||
		num(q, "used_share") != 0.3333 || num(q, "demand") != 1.1667 {
		// One client's three sessions weigh 1 + 1/2 + 1/4 (docs/questions.md).
		t.Errorf("question %v: want 3 asks in 3 sessions, 1 used (0.3333), demand 1.75 × 2/3 = 1.1667", q)
	}

	t.Run("OKAnswerEveryTransport", func(t *testing.T) {
		a := awaitAnswer(t, td, tok, ns, "How do we run the migrations?")
		if a["text"] != "Run make migrate before deploying." || a["kind"] != "model" || a["extractive"] == true {
			t.Errorf("answer %v, want the model's sentence", a)
		}
		if ids, _ := a["source_ids"].([]any); len(ids) != 1 || ids[0] != srcID {
			t.Errorf("source_ids %v, want [%s]", a["source_ids"], srcID)
		}
		var first []byte
		for _, tr := range transports(td) {
			r := tr.call(t, tok, "memory_answer", map[string]any{"namespace": ns, "question_id": str(q, "id")})
			if !r.ok || str(r.body, "answer", "basis") != a["basis"] {
				t.Errorf("%s: %v", tr.name(), r)
			}
			raw, _ := json.Marshal(r.body)
			if first != nil && string(raw) != string(first) {
				t.Errorf("%s differs:\n%s\n%s", tr.name(), raw, first)
			}
			first = raw
		}
	})

	t.Run("OKStaleUntilRefreshed", func(t *testing.T) {
		before := awaitAnswer(t, td, tok, ns, "How do we run the migrations?")
		// Hold the refresh in the model server while the answer is read.
		gate := make(chan struct{})
		srv.Reset()
		srv.Script(modeltest.Rule{Path: "/api/chat", Times: 1, Action: modeltest.Action{Gate: gate, Reply: func(c modeltest.Chat) string {
			return fmt.Sprintf(`{"sentences": [{"text": "Run make migrate-all first.", "source_ids": [%q]}]}`, srcID)
		}}}, firstSentence)
		got := rest.call(t, tok, "memory_get", map[string]any{"ids": []string{srcID}})
		rev := num(got.body, "records", 0, "revision")
		if r := rest.call(t, tok, "memory_update", map[string]any{"id": srcID, "revision": rev,
			"changes": map[string]any{"content": "Run make migrate-all first. CI runs them on a scratch database."}}); !r.ok {
			t.Fatal(r)
		}
		for _, tr := range transports(td) {
			r := tr.call(t, tok, "memory_answer", map[string]any{"namespace": ns, "text": "migrations: how to run them?"})
			if !r.ok || get(r.body, "answer", "stale") != true || str(r.body, "question", "answer_state") != "stale" {
				t.Errorf("%s after the edit: %v, want stale", tr.name(), r)
			}
		}
		close(gate)
		after := awaitAnswer(t, td, tok, ns, "How do we run the migrations?")
		if after["text"] != "Run make migrate-all first." || after["basis"] == before["basis"] {
			t.Errorf("after the refresh: %v, want the new sentence and basis", after)
		}
	})

	t.Run("OKDeclare", func(t *testing.T) {
		for _, tr := range transports(td) {
			r := tr.call(t, tok, "memory_question_add", map[string]any{"namespace": ns, "text": "Who reviews schema changes?"})
			if !r.ok || get(r.body, "question", "declared") != true || str(r.body, "question", "namespace") != ns {
				t.Errorf("%s: %v", tr.name(), r)
			}
		}
		a := awaitAnswer(t, td, tok, ns, "schema changes: who reviews?")
		if a["text"] != "No record in scope answers this." || a["kind"] != "none" {
			t.Errorf("declared question: %v, want no record in scope", a)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		r := rest.call(t, tok, "memory_answer", map[string]any{"namespace": ns, "text": "where do the dragons live"})
		if r.ok || r.code != "NOT_FOUND" || r.http != 404 || str(r.body, "error", "field") != "text" {
			t.Errorf("got %v, want NOT_FOUND naming text", r)
		}
		r = rest.call(t, tok, "memory_answer", map[string]any{"question_id": "01JD3M5ZK9Q8W7E6R5T4Y3X2V1"})
		if r.ok || r.code != "NOT_FOUND" || str(r.body, "error", "field") != "question_id" {
			t.Errorf("got %v, want NOT_FOUND naming question_id", r)
		}
		r = rest.call(t, tok, "memory_answer", map[string]any{"question_id": "01JD3M5ZK9Q8W7E6R5T4Y3X2V1", "text": "x y"})
		if r.ok || r.code != "INVALID_ARGUMENT" || str(r.body, "error", "field") != "question_id" {
			t.Errorf("both: got %v, want INVALID_ARGUMENT naming question_id", r)
		}
	})

	t.Run("OKReadOnly", func(t *testing.T) {
		// memory_answer writes nothing and calls no model: the database's
		// data_version (it moves when any other connection commits) and the
		// model server's chat log stay as they were.
		awaitAnswer(t, td, tok, ns, "How do we run the migrations?")
		if err := td.db.FlushAsks(context.Background()); err != nil {
			t.Fatal(err)
		}
		conn := dataVersionConn(t, filepath.Join(td.Config.DataDir, "hearth.db"))
		dv := dataVersion(t, conn)
		chats := srv.Count("/api/chat")
		for i := range 10 {
			for _, tr := range transports(td) {
				args := map[string]any{"namespace": ns, "text": "How do we run the migrations?"}
				if i%2 == 1 {
					args = map[string]any{"question_id": str(q, "id")}
				}
				if r := tr.call(t, tok, "memory_answer", args); !r.ok {
					t.Fatal(r)
				}
			}
		}
		if got := dataVersion(t, conn); got != dv {
			t.Errorf("data_version moved from %d to %d: something was written", dv, got)
		}
		if got := srv.Count("/api/chat"); got != chats {
			t.Errorf("%d chat calls during memory_answer, want none", got-chats)
		}
	})
}

// dataVersionConn opens one connection of its own to the database file.
func dataVersionConn(t *testing.T, path string) *sql.Conn {
	t.Helper()
	db, err := driver.Open("file:" + path + "?_pragma=busy_timeout(5000)&_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func dataVersion(t *testing.T, conn *sql.Conn) int64 {
	t.Helper()
	var v int64
	if err := conn.QueryRowContext(context.Background(), `PRAGMA data_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}
