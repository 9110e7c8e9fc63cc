package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/storage/storagetest"
)

// migrationQueries are the searches a migration must answer alike: words,
// and a CJK query (bigrams), each in its namespace.
var migrationQueries = []map[string]any{
	{"namespace": "global", "query": "invoice retries"},
	{"namespace": "github/acme/api", "query": "orders database"},
	{"namespace": "github/acme/docs", "query": "部署审核"},
}

// migrationReads is what a client reads back of a migrated store: the
// searches' hits, each exported record's history and the records
// themselves, read in that order (a get counts a use, which a search
// after it would weigh).
type migrationReads struct {
	Searches  [][]string // hit ids and statuses, in order
	Histories []any      // record and evidence of each history
	Records   []any      // memory_get's records
	// Audit is each history's audit rows (action, client, revision):
	// these do not move with the records.
	Audit [][]string
}

func readMigrated(t *testing.T, td *testDaemon, ids []string) migrationReads {
	t.Helper()
	rest, tok := restTransport{td}, td.tokens["claude-code"]
	var out migrationReads
	for _, q := range migrationQueries {
		r := rest.call(t, tok, "memory_search", q)
		if !r.ok {
			t.Fatalf("memory_search %v: %v", q, r)
		}
		var hits []string
		for _, h := range list(r.body, "hits") {
			hits = append(hits, str(h, "id")+" "+str(h, "status"))
		}
		out.Searches = append(out.Searches, hits)
	}
	for _, id := range ids {
		r := rest.call(t, tok, "memory_history", map[string]any{"id": id})
		if !r.ok {
			t.Fatalf("memory_history %s: %v", id, r)
		}
		out.Histories = append(out.Histories, map[string]any{"record": r.body["record"], "evidence": r.body["evidence"]})
		var rows []string
		for _, e := range list(r.body, "entries") {
			rows = append(rows, fmt.Sprintf("%s %s %v", str(e, "action"), str(e, "client"), e.(map[string]any)["revision"]))
		}
		out.Audit = append(out.Audit, rows)
	}
	r := rest.call(t, tok, "memory_get", map[string]any{"ids": ids})
	if !r.ok {
		t.Fatalf("memory_get: %v", r)
	}
	out.Records = r.body["records"].([]any)
	return out
}

func dump(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// TestMigrate_SQLiteToPostgres holds the migration path of
// docs/operations.md ("PostgreSQL", "Moving a SQLite store to
// PostgreSQL"), as an administrator runs it on one data directory: hearth
// export --data DIR from the server on SQLite; that server stopped; hearth
// serve --data DIR --database URL on a new, empty PostgreSQL database;
// hearth import --data DIR --as-active. What a client reads back is the
// same on both: every record (revisions, writers, times, topics, anchors
// with their checks, supersession links, evidence and its counts, CJK
// text), the searches (a CJK one too) and each record's history but its
// audit rows and usage. The clients' generated tokens carry over in DIR.
// A forgotten record does not. The way back, PostgreSQL to a SQLite data
// directory, is checked the same way.
func TestMigrate_SQLiteToPostgres(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := openDaemon(t, &Daemon{Config: Config{DataDir: dir, Options: parityOptions()}}, false)
	tok, rest := src.tokens["claude-code"], restTransport{src}
	must := func(r result) map[string]any {
		t.Helper()
		if !r.ok {
			t.Fatalf("seed: %v", r)
		}
		return r.body
	}
	id := func(body map[string]any) string { return str(body, "record", "id") }

	note := id(must(rest.call(t, tok, "memory_store", map[string]any{"namespace": "global", "type": "note", "title": "Invoice retries",
		"content": "The billing service retries a failed invoice three times.", "topics": []string{"billing"}})))
	must(rest.call(t, tok, "memory_update", map[string]any{"id": note, "revision": 1,
		"changes": map[string]any{"content": "The billing service retries a failed invoice five times, an hour apart."}}))
	const api = "github/acme/api"
	must(rest.call(t, tok, "memory_store", anchoredArgs(api, "Schema file", "The orders database schema is in db/schema.sql.", "path:db/schema.sql")))
	old := id(must(rest.call(t, tok, "memory_store", map[string]any{"namespace": api, "type": "decision", "title": "Orders in Postgres",
		"content": "The orders database is Postgres."})))
	mid := id(must(rest.call(t, tok, "memory_store", map[string]any{"namespace": api, "type": "decision", "title": "Orders in MySQL",
		"content": "The orders database moved to MySQL.", "supersedes": old})))
	last := id(must(rest.call(t, tok, "memory_store", map[string]any{"namespace": api, "type": "decision", "title": "Orders in SQLite",
		"content": "The orders database moved to SQLite.", "supersedes": mid})))
	must(rest.call(t, src.tokens["codex"], "memory_evidence", map[string]any{"id": last, "stance": "corroborates", "note": "checked the config"}))
	must(rest.call(t, src.tokens["codex"], "memory_evidence", map[string]any{"id": note, "stance": "contradicts", "note": "it is four"}))
	must(rest.call(t, tok, "memory_store", map[string]any{"namespace": "github/acme/docs", "type": "note", "title": "部署流程",
		"content": "生产环境的部署需要两名审核人批准，周五不部署。"}))
	gone := id(must(rest.call(t, tok, "memory_store", storeArgs("global", "Temporary", "A note forgotten before the move."))))
	must(rest.call(t, tok, "memory_forget", map[string]any{"id": gone, "revision": 1, "reason": "obsolete"}))

	file := filepath.Join(t.TempDir(), "all.jsonl")
	if code, _, stderr := cli(t, "export", "--data", dir, "--out", file); code != 0 || !strings.Contains(stderr, "exported 6 records") {
		t.Fatalf("export: exit %d %q, want 6 records (the forgotten one left out)", code, stderr)
	}
	ids := exportedIDs(t, readFile(t, file))
	want := readMigrated(t, src, ids)
	closeDaemon(t, src)

	// Started again on the same data directory with a database: tokens
	// and options stay in DIR, the records go to PostgreSQL.
	pg := parityOptions()
	pg.DatabaseURL = storagetest.EmptyURL(t)
	dst := openDaemon(t, &Daemon{Config: Config{DataDir: dir, Options: pg}}, true)
	if h := healthOf(t, dst); h["backend"] != "postgres" {
		t.Fatalf("/health of the second start: %v, want backend postgres", h)
	}
	if dst.tokens["claude-code"] != tok {
		t.Errorf("the generated token changed on the start on PostgreSQL")
	}
	code, stdout, stderr := cli(t, "import", "--data", dir, "--as-active", file)
	if code != 0 || !strings.Contains(stdout, "imported 6, unchanged 0, failed 0") {
		t.Fatalf("import: exit %d %q %q", code, stdout, stderr)
	}
	got := readMigrated(t, dst, ids)
	compareMigrated(t, "SQLite to PostgreSQL", want, got)
	if r := (restTransport{dst}).call(t, tok, "memory_get", map[string]any{"ids": []string{gone}}); !r.ok || len(list(r.body, "records")) != 0 {
		t.Errorf("the forgotten record on PostgreSQL: %v, want none", r)
	}

	// The way back: PostgreSQL's export is the same file, and a SQLite
	// data directory that imports it reads the same.
	back := filepath.Join(t.TempDir(), "back.jsonl")
	if code, _, stderr := cli(t, "export", "--data", dir, "--out", back); code != 0 {
		t.Fatalf("export from PostgreSQL: exit %d %q", code, stderr)
	}
	if a, b := readFile(t, file), readFile(t, back); a != b {
		t.Errorf("PostgreSQL's export differs from SQLite's:\n%s\n%s", a, b)
	}
	lite := startDaemon(t, parityOptions())
	if code, stdout, stderr := cli(t, "import", "--data", lite.Config.DataDir, "--as-active", back); code != 0 || !strings.Contains(stdout, "imported 6, unchanged 0, failed 0") {
		t.Fatalf("import into SQLite: exit %d %q %q", code, stdout, stderr)
	}
	compareMigrated(t, "PostgreSQL to SQLite", want, readMigrated(t, lite, ids))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// exportedIDs are the ids of an export's lines, in order.
func exportedIDs(t *testing.T, lines string) []string {
	t.Helper()
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(lines), "\n") {
		var rec struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.ID)
	}
	return ids
}

// compareMigrated fails the test unless got, read after an import, is
// want, read before the export, but for the audit rows: each history holds
// one, the import's, by the local admin (the import went over DIR's admin
// socket), at the record's revision.
func compareMigrated(t *testing.T, leg string, want, got migrationReads) {
	t.Helper()
	for i, rows := range got.Audit {
		rev := got.Histories[i].(map[string]any)["record"].(map[string]any)["revision"]
		if w := fmt.Sprintf("import hearth:local-admin %v", rev); len(rows) != 1 || rows[0] != w {
			t.Errorf("%s: the audit rows of history %d: %q, want [%q]", leg, i, rows, w)
		}
	}
	got.Audit, want.Audit = nil, nil
	if a, b := dump(want), dump(got); a != b {
		t.Errorf("%s: reads differ:\nwant %s\ngot  %s", leg, a, b)
	}
}
