package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
)

// cli runs one hearth subcommand in process and returns its exit code and
// output.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// tokenFile is the path of a client's generated token in td's data dir.
func tokenFile(td *testDaemon, client string) string {
	return filepath.Join(td.TokensDir(), client)
}

// bulk stores n active records straight into the daemon's store, through
// Import (storage.ImportBatch records per transaction).
func bulk(t testing.TB, db *storage.DB, ns string, n int) {
	t.Helper()
	items := make([]storage.ImportItem, n)
	for j := range items {
		title, _ := screen.Check("title", fmt.Sprintf("Bulk record %d", j))
		content, _ := screen.Check("content", fmt.Sprintf("Bulk content %d on caches, queues and deploys.", j))
		items[j] = storage.ImportItem{Namespace: ns, Type: storage.TypeNote, Title: title, Content: content,
			Confidence: 0.8, Status: storage.StatusActive, Writer: "bench", Source: storage.SourceImport}
	}
	res, err := db.Import(context.Background(), items, storage.ImportOptions{Client: "bench", AsActive: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
}

// TestBackup_DuringWrites holds the backup's promise end to end: `hearth
// backup` against a running server, while 8 clients store records over
// gRPC, writes a file that passes the integrity checks, and `hearth
// restore` of it into another data dir gives a store holding every write
// acknowledged before the backup started.
func TestBackup_DuringWrites(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, parityOptions())
	bulk(t, td.db, "github/acme/bulk", 500)
	tok := td.tokens["claude-code"]

	var (
		mu      sync.Mutex
		acked   []string
		backing atomic.Bool
		during  atomic.Int64
		stop    = make(chan struct{})
		wg      sync.WaitGroup
		failed  = make(chan string, 8)
	)
	g := grpcTransport{td: td}
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				r := g.call(t, tok, "memory_store", storeArgs("github/acme/burst", fmt.Sprintf("Writer %d write %d", w, i), "Stored while a backup runs."))
				if !r.ok {
					failed <- r.String()
					return
				}
				if backing.Load() {
					during.Add(1)
				}
				mu.Lock()
				acked = append(acked, str(r.body, "record", "id"))
				mu.Unlock()
			}
		}()
	}
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 40 {
			break
		}
		poll()
	}
	mu.Lock()
	before := append([]string(nil), acked...)
	mu.Unlock()
	out := filepath.Join(t.TempDir(), "hearth-backup.db")
	// Without a token, the CLI asks the server that holds the data
	// directory over its admin socket (TestLocalAdmin_Socket).
	local := filepath.Join(t.TempDir(), "hearth-local.db")
	if code, stdout, stderr := cli(t, "backup", "--data", td.Config.DataDir, "--out", local); code != 0 ||
		!strings.Contains(stdout, "backup by the running server written to "+local) {
		t.Errorf("backup of a held directory without a token: exit %d, %s%s", code, stdout, stderr)
	}
	backing.Store(true)
	code, stdout, stderr := cli(t, "backup", "--data", td.Config.DataDir, "--out", out, "--url", td.url, "--token-file", tokenFile(td, "claude-code"))
	backing.Store(false)
	close(stop)
	wg.Wait()
	close(failed)
	for f := range failed {
		t.Fatalf("writer: %s", f)
	}
	if code != 0 {
		t.Fatalf("hearth backup: exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "backup by the running server written to "+out) {
		t.Errorf("stdout %q", stdout)
	}
	if during.Load() == 0 {
		t.Errorf("no write was acknowledged while the backup ran: the test proves nothing")
	}
	if n, err := storage.Verify(context.Background(), out); err != nil || n < 500+len(before) {
		t.Errorf("Verify: %d records, %v; want at least %d", n, err, 500+len(before))
	}
	if entries, _ := os.ReadDir(td.BackupDir()); len(entries) != 0 {
		t.Errorf("the server's copy stayed in %s: %v", td.BackupDir(), entries)
	}

	dir2 := t.TempDir()
	if code, stdout, stderr := cli(t, "restore", "--data", dir2, out); code != 0 {
		t.Fatalf("hearth restore: exit %d\n%s%s", code, stdout, stderr)
	}
	td2 := startDaemon2(t, dir2)
	got, err := td2.db.Get(context.Background(), before)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(before) {
		t.Errorf("the restored store holds %d of the %d writes acknowledged before the backup", len(got), len(before))
	}
	// The server reports the backup.
	r := restTransport{td}.call(t, tok, "memory_status", map[string]any{})
	if str(r.body, "last_backup_at") == "" {
		t.Errorf("memory_status after a backup: %s, want last_backup_at", r.raw)
	}
}

// storeState is what the API shows of a whole store: every record as
// exported (with anchors and evidence), the newest 500 audit rows and the
// status. A write of any record or audit row changes it.
func storeState(t *testing.T, td *testDaemon) string {
	t.Helper()
	tok := td.tokens["claude-code"]
	rest := restTransport{td}
	var b strings.Builder
	for _, call := range []struct {
		tool string
		args map[string]any
	}{{"memory_export", map[string]any{"limit": 1000}}, {"memory_audit", map[string]any{"limit": 500}}, {"memory_status", map[string]any{}}} {
		r := rest.call(t, tok, call.tool, call.args)
		if !r.ok {
			t.Fatalf("%s: %v", call.tool, r)
		}
		if st := withoutDiskFigures(r.body); st != nil {
			// The disk's space, the WAL's size and its checkpoints move by
			// themselves (other processes, the usage flusher).
			raw, err := json.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(raw)
			continue
		}
		b.Write(r.raw)
	}
	return b.String()
}

// startDaemon2 opens a daemon on an existing data dir.
func startDaemon2(t *testing.T, dir string) *testDaemon {
	t.Helper()
	return openDaemon(t, &Daemon{Config: Config{DataDir: dir, Options: parityOptions()}}, true)
}

// poll waits a moment between two looks at what other goroutines did.
func poll() { time.Sleep(time.Millisecond) }

func TestRestore(t *testing.T) {
	t.Parallel()
	t.Run("ErrServerRunning", func(t *testing.T) {
		td := startDaemon(t, parityOptions())
		tok := td.tokens["claude-code"]
		if r := (restTransport{td}).call(t, tok, "memory_store", storeArgs("github/acme/live", "Live", "Kept.")); !r.ok {
			t.Fatal(r)
		}
		file := filepath.Join(t.TempDir(), "b.db")
		if code, _, stderr := cli(t, "backup", "--data", td.Config.DataDir, "--out", file, "--url", td.url, "--token-file", tokenFile(td, "claude-code")); code != 0 {
			t.Fatal(stderr)
		}
		before := storeState(t, td)
		code, _, stderr := cli(t, "restore", "--data", td.Config.DataDir, file)
		if code != 1 || !strings.Contains(stderr, "refused: a server holds") || !strings.Contains(stderr, fmt.Sprintf("pid %d", os.Getpid())) {
			t.Errorf("restore against a live server: exit %d, %q; want refused naming the server's pid", code, stderr)
		}
		if after := storeState(t, td); after != before {
			t.Errorf("a refused restore changed the store:\nbefore %s\nafter  %s", before, after)
		}
		if r := (restTransport{td}).call(t, tok, "memory_status", map[string]any{}); !r.ok {
			t.Errorf("the server after a refused restore: %v", r)
		}
	})
	t.Run("OKStopped", func(t *testing.T) {
		dir := t.TempDir()
		td := openDaemon(t, &Daemon{Config: Config{DataDir: dir, Options: parityOptions()}}, false)
		tok := td.tokens["claude-code"]
		first := restTransport{td}.call(t, tok, "memory_store", storeArgs("github/acme/x", "Before the backup", "In the backup."))
		closeDaemon(t, td)
		file := filepath.Join(t.TempDir(), "offline.db")
		// No server: the CLI copies the file itself, no token needed.
		code, stdout, stderr := cli(t, "backup", "--data", dir, "--out", file)
		if code != 0 || !strings.Contains(stdout, "(no server running)") {
			t.Fatalf("offline backup: exit %d %q %q", code, stdout, stderr)
		}
		td = openDaemon(t, &Daemon{Config: Config{DataDir: dir, Options: parityOptions()}}, false)
		restTransport{td}.call(t, tok, "memory_store", storeArgs("github/acme/x", "After the backup", "Not in it."))
		closeDaemon(t, td)

		code, stdout, stderr = cli(t, "restore", "--data", dir, file)
		if code != 0 || !strings.Contains(stdout, "restored ") || !strings.Contains(stdout, "before-restore-") {
			t.Fatalf("restore: exit %d %q %q", code, stdout, stderr)
		}
		td = startDaemon2(t, dir)
		if got, _ := td.db.Get(context.Background(), []string{str(first.body, "record", "id")}); len(got) != 1 {
			t.Errorf("the record from before the backup is missing")
		}
		r := restTransport{td}.call(t, tok, "memory_search", map[string]any{"namespace": "github/acme/x", "query": "after the backup"})
		if hits := list(r.body, "hits"); len(hits) != 1 || str(hits[0], "title") != "Before the backup" {
			t.Errorf("search after the restore: %s, want only the record from before the backup", r.raw)
		}
		aside, _ := filepath.Glob(filepath.Join(dir, "backups", "before-restore-*", "hearth.db"))
		if len(aside) != 1 {
			t.Errorf("the replaced database is not kept aside: %v", aside)
		}
	})
	t.Run("ErrNotABackup", func(t *testing.T) {
		dir := t.TempDir()
		bad := filepath.Join(t.TempDir(), "bad.db")
		os.WriteFile(bad, []byte("SQLite format 3\x00 but not really"), 0o600)
		if code, _, stderr := cli(t, "restore", "--data", dir, bad); code != 1 || stderr == "" {
			t.Errorf("restore of garbage: exit %d %q", code, stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "hearth.db")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a refused restore left a database: %v", err)
		}
	})
}

// TestExportImport_RoundTrip holds export → import on another data dir:
// every record comes back field for field with as_active (id, revision,
// writer, times, anchors, evidence and its counts, supersession links); a
// second import changes nothing; a bad line is reported by its number and
// the others are imported.
func TestExportImport_RoundTrip(t *testing.T) {
	t.Parallel()
	src := startDaemon(t, parityOptions())
	tok := src.tokens["claude-code"]
	rest := restTransport{src}
	ns := "github/acme/trip"
	old := rest.call(t, tok, "memory_store", map[string]any{"namespace": ns, "type": "decision", "title": "Use Postgres",
		"content": "Orders live in Postgres.", "topics": []string{"db"}, "anchors": []string{"path:db/schema.sql"}})
	repl := rest.call(t, tok, "memory_store", map[string]any{"namespace": ns, "type": "decision", "title": "Use SQLite",
		"content": "Orders moved to SQLite.", "supersedes": str(old.body, "record", "id")})
	ev := rest.call(t, src.tokens["codex"], "memory_evidence", map[string]any{"id": str(repl.body, "record", "id"), "stance": "corroborates", "note": "checked"})
	if !old.ok || !repl.ok || !ev.ok {
		t.Fatalf("seed: %v %v %v", old, repl, ev)
	}
	rest.call(t, tok, "memory_store", storeArgs("github/acme/other", "Another repo", "Also exported."))
	rest.call(t, tok, "memory_store", storeArgs("github/acmecorp/x", "Not under the prefix", "Left out."))

	file := filepath.Join(t.TempDir(), "acme.jsonl")
	code, _, stderr := cli(t, "export", "--url", src.url, "--token-file", tokenFile(src, "claude-code"), "--prefix", "github/acme", "--out", file)
	if code != 0 || !strings.Contains(stderr, "exported 3 records") {
		t.Fatalf("export: exit %d %q", code, stderr)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("export file: %v %v, want mode 0600", fi, err)
	}

	dst := startDaemon(t, parityOptions())
	dtok := tokenFile(dst, "claude-code")
	code, stdout, stderr := cli(t, "import", "--url", dst.url, "--token-file", dtok, "--as-active", file)
	if code != 0 || !strings.Contains(stdout, "imported 3, unchanged 0, failed 0") {
		t.Fatalf("import: exit %d %q %q", code, stdout, stderr)
	}
	want, _, _ := src.db.Export(context.Background(), storage.ExportQuery{Prefix: "github/acme", Limit: 100})
	for _, w := range want {
		got, err := dst.db.Get(context.Background(), []string{w.ID})
		if err != nil || len(got) != 1 {
			t.Fatalf("record %s missing after import: %v", w.ID, err)
		}
		if !reflect.DeepEqual(got[0], w.Record) {
			t.Errorf("record %s:\ngot  %+v\nwant %+v", w.ID, got[0], w.Record)
		}
	}

	before := storeState(t, dst)
	code, stdout, _ = cli(t, "import", "--url", dst.url, "--token-file", dtok, "--as-active", file)
	if code != 0 || !strings.Contains(stdout, "imported 0, unchanged 3, failed 0") {
		t.Errorf("second import: exit %d %q", code, stdout)
	}
	if after := storeState(t, dst); after != before {
		t.Errorf("a second import changed the store:\nbefore %s\nafter  %s", before, after)
	}

	// Without --as-active (issue 42): the superseded record is skipped and
	// counted, the rest arrive as candidates, and the summary says so; a
	// bad line after the skipped one keeps its own line number.
	t.Run("AsCandidates", func(t *testing.T) {
		cand := startDaemon(t, parityOptions())
		code, stdout, stderr := cli(t, "import", "--url", cand.url, "--token-file", tokenFile(cand, "claude-code"), file)
		if code != 0 || !strings.Contains(stdout, "imported 2, unchanged 0, skipped 1, failed 0") ||
			!strings.Contains(stdout, "the 2 imported are candidates awaiting review") ||
			!strings.Contains(stdout, "skipped 1 superseded: a record another replaced is imported only with --as-active") {
			t.Fatalf("import without --as-active: exit %d %q %q", code, stdout, stderr)
		}
		exported, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(exported)), "\n")
		if !strings.Contains(lines[0], `"status":"superseded"`) {
			t.Fatalf("the export's first line is not the superseded record: %s", lines[0])
		}
		withBad := filepath.Join(t.TempDir(), "bad.jsonl")
		os.WriteFile(withBad, []byte(lines[0]+"\n"+`{"namespace":"github/acme/trip","type":"opinion","title":"x","content":"y"}`+"\n"), 0o600)
		code, stdout, _ = cli(t, "import", "--url", cand.url, "--token-file", tokenFile(cand, "claude-code"), withBad)
		if code != 1 || !strings.Contains(stdout, "line 2: type: ") || !strings.Contains(stdout, "skipped 1, failed 1") {
			t.Errorf("a bad line after a skipped one: exit %d %q, want line 2 reported", code, stdout)
		}
	})

	t.Run("BadLines", func(t *testing.T) {
		lines := strings.Join([]string{
			`{"namespace":"github/acme/mixed","type":"note","title":"Good one","content":"Kept."}`,
			`{"namespace":"github/acme/mixed","type":"note","title":`,
			``,
			`{"namespace":"github/acme/mixed","type":"note","title":"Leaky","content":"token ` + secretGitHub + `"}`,
			`{"namespace":"github/acme/mixed","type":"opinion","title":"Bad type","content":"x"}`,
			`{"namespace":"github/acme/mixed","type":"note","title":"Good two","content":"Kept too."}`,
			`{"id":"` + want[0].ID + `","namespace":"github/acme/trip","type":"decision","title":"Same id","content":"Other content."}`,
		}, "\n")
		bad := filepath.Join(t.TempDir(), "mixed.jsonl")
		os.WriteFile(bad, []byte(lines), 0o600)
		code, stdout, _ := cli(t, "import", "--url", dst.url, "--token-file", dtok, bad)
		if code != 1 || !strings.Contains(stdout, "imported 2, unchanged 0, skipped 0, failed 4") {
			t.Errorf("exit %d %q, want 2 imported and 4 failed", code, stdout)
		}
		for _, want := range []string{"line 2: ", "line 4: content: refused: looks like a secret (pattern ", "line 5: type: ",
			"line 7: id: a record with this id exists with other content"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("report %q lacks %q", stdout, want)
			}
		}
		if strings.Contains(stdout, secretGitHub) {
			t.Errorf("the report echoes the secret")
		}
		audit := restTransport{dst}.call(t, dst.tokens["claude-code"], "memory_audit", map[string]any{"limit": 5})
		var screenRow, conflictRow bool
		for _, e := range list(audit.body, "entries") {
			screenRow = screenRow || str(e, "action") == "refuse.screen" && strings.Contains(str(e, "detail"), "line 4 field content pattern ")
			conflictRow = conflictRow || str(e, "action") == "refuse.conflict" && strings.Contains(str(e, "detail"), "line 7 id "+want[0].ID)
		}
		if !screenRow || !conflictRow {
			t.Errorf("audit %s: want a refuse.screen row for line 4 and a refuse.conflict row for line 7", audit.raw)
		}
		r := restTransport{dst}.call(t, dst.tokens["claude-code"], "memory_search", map[string]any{"namespace": "github/acme/mixed", "query": "good"})
		if len(list(r.body, "hits")) != 2 {
			t.Errorf("search after import: %s, want the two good lines as records", r.raw)
		}
		for _, h := range list(r.body, "hits") {
			if str(h, "status") != "candidate" {
				t.Errorf("imported without as_active: %v, want a candidate", h)
			}
		}
	})
	t.Run("ErrAsActiveWithoutAdmin", func(t *testing.T) {
		td := startDaemon(t, testOptions()) // claude-code: read, write, delete
		r := restTransport{td}.call(t, td.tokens["claude-code"], "memory_import", map[string]any{"lines": `{"namespace":"global","type":"note","title":"t","content":"c"}`, "as_active": true})
		if r.ok || r.code != "PERMISSION_DENIED" {
			t.Errorf("got %v, want PERMISSION_DENIED", r)
		}
	})
}
