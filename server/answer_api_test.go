package server_test

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
	"github.com/hearth-memory/hearth/server/servertest"
)

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
	t.Parallel()
	o := testOptions()
	srv, firstSentence := answerModel(t, &o)
	td := servertest.Start(t, o)
	tok := td.Tokens["claude-code"]
	rest := td.REST
	const ns = "github/acme/answers"
	stored := rest.Call(t, tok, "memory_store", storeArgs(ns, "Migrations", "Run make migrate before deploying. CI runs them on a scratch database."))
	if !stored.OK {
		t.Fatal(stored)
	}
	srcID := str(stored.Body, "record", "id")

	// One search per transport, each in its own session.
	for _, tr := range td.Transports() {
		r := tr.Call(t, tok, "memory_search", map[string]any{"namespace": ns, "query": "How do we run the migrations?", "session_id": "s-" + tr.Name()})
		if !r.OK {
			t.Fatalf("%s search: %v", tr.Name(), r)
		}
	}
	// Neither a recall search nor a secret query is recorded.
	for _, args := range []map[string]any{
		{"namespace": ns, "query": "running migrations", "recall": true, "session_id": "s-recall"},
		{"namespace": ns, "query": "migrations with " + secretGitHub, "session_id": "s-secret"},
	} {
		if r := rest.Call(t, tok, "memory_search", args); !r.OK {
			t.Fatal(r)
		}
	}
	// A get of a hit in the REST search's session: that ask was used.
	if r := rest.Call(t, tok, "memory_get", map[string]any{"ids": []string{srcID}, "session_id": "s-rest"}); !r.OK {
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
		for _, tr := range td.Transports() {
			r := tr.Call(t, tok, "memory_answer", map[string]any{"namespace": ns, "question_id": str(q, "id")})
			if !r.OK || str(r.Body, "answer", "basis") != a["basis"] {
				t.Errorf("%s: %v", tr.Name(), r)
			}
			raw, _ := json.Marshal(r.Body)
			if first != nil && string(raw) != string(first) {
				t.Errorf("%s differs:\n%s\n%s", tr.Name(), raw, first)
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
		got := rest.Call(t, tok, "memory_get", map[string]any{"ids": []string{srcID}})
		rev := num(got.Body, "records", 0, "revision")
		if r := rest.Call(t, tok, "memory_update", map[string]any{"id": srcID, "revision": rev,
			"changes": map[string]any{"content": "Run make migrate-all first. CI runs them on a scratch database."}}); !r.OK {
			t.Fatal(r)
		}
		for _, tr := range td.Transports() {
			r := tr.Call(t, tok, "memory_answer", map[string]any{"namespace": ns, "text": "migrations: how to run them?"})
			if !r.OK || get(r.Body, "answer", "stale") != true || str(r.Body, "question", "answer_state") != "stale" {
				t.Errorf("%s after the edit: %v, want stale", tr.Name(), r)
			}
		}
		close(gate)
		after := awaitAnswer(t, td, tok, ns, "How do we run the migrations?")
		if after["text"] != "Run make migrate-all first." || after["basis"] == before["basis"] {
			t.Errorf("after the refresh: %v, want the new sentence and basis", after)
		}
	})

	t.Run("OKDeclare", func(t *testing.T) {
		for _, tr := range td.Transports() {
			r := tr.Call(t, tok, "memory_question_add", map[string]any{"namespace": ns, "text": "Who reviews schema changes?"})
			if !r.OK || get(r.Body, "question", "declared") != true || str(r.Body, "question", "namespace") != ns {
				t.Errorf("%s: %v", tr.Name(), r)
			}
		}
		a := awaitAnswer(t, td, tok, ns, "schema changes: who reviews?")
		if a["text"] != "No record in scope answers this." || a["kind"] != "none" {
			t.Errorf("declared question: %v, want no record in scope", a)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		r := rest.Call(t, tok, "memory_answer", map[string]any{"namespace": ns, "text": "where do the dragons live"})
		if r.OK || r.Code != "NOT_FOUND" || r.HTTP != 404 || str(r.Body, "error", "field") != "text" {
			t.Errorf("got %v, want NOT_FOUND naming text", r)
		}
		r = rest.Call(t, tok, "memory_answer", map[string]any{"question_id": "01JD3M5ZK9Q8W7E6R5T4Y3X2V1"})
		if r.OK || r.Code != "NOT_FOUND" || str(r.Body, "error", "field") != "question_id" {
			t.Errorf("got %v, want NOT_FOUND naming question_id", r)
		}
		r = rest.Call(t, tok, "memory_answer", map[string]any{"question_id": "01JD3M5ZK9Q8W7E6R5T4Y3X2V1", "text": "x y"})
		if r.OK || r.Code != "INVALID_ARGUMENT" || str(r.Body, "error", "field") != "question_id" {
			t.Errorf("both: got %v, want INVALID_ARGUMENT naming question_id", r)
		}
	})

	t.Run("OKReadOnly", func(t *testing.T) {
		// memory_answer writes nothing and calls no model: the database's
		// data_version (it moves when any other connection commits) and the
		// model server's chat log stay as they were.
		awaitAnswer(t, td, tok, ns, "How do we run the migrations?")
		if err := td.DB.FlushAsks(context.Background()); err != nil {
			t.Fatal(err)
		}
		conn := dataVersionConn(t, filepath.Join(td.Dir, "hearth.db"))
		dv := dataVersion(t, conn)
		chats := srv.Count("/api/chat")
		for i := range 10 {
			for _, tr := range td.Transports() {
				args := map[string]any{"namespace": ns, "text": "How do we run the migrations?"}
				if i%2 == 1 {
					args = map[string]any{"question_id": str(q, "id")}
				}
				if r := tr.Call(t, tok, "memory_answer", args); !r.OK {
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
