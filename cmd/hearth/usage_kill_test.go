package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/ext/fts5"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/testwait"
)

// TestKill_UsageCounts holds the usage counters (R-K5) across a crash and a
// clean stop now that reads count in memory: after SIGKILL at most the uses
// of the last unflushed second are lost and none is counted twice; after a
// clean stop every use is stored, exactly once.
func TestKill_UsageCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the hearth binary")
	}
	t.Parallel()
	ctx := context.Background()
	bin := buildHearth(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "hearth.db")

	p := startHearth(t, bin, dir)
	tok, err := os.ReadFile(filepath.Join(dir, "tokens", "claude-code"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tok))
	rest := restTransport{&testDaemon{url: "http://" + p.addr}}
	stored := rest.call(t, token, "memory_store", storeArgs("global", "Retry policy", "Webhooks retry with exponential backoff."))
	id := str(stored.body, "record", "id")
	search := func(n int) {
		for range n {
			if r := rest.call(t, token, "memory_search", map[string]any{"query": "webhooks backoff"}); !r.ok || str(r.body, "hits", 0, "id") != id {
				t.Fatalf("search: %v", r)
			}
		}
	}

	// Read the file as another process would, read-only, while hearth runs.
	ro, err := driver.Open("file:"+filepath.ToSlash(path)+"?mode=ro&_pragma=busy_timeout(5000)", fts5.Register)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	returned := func() int {
		var n sql.NullInt64
		if err := ro.QueryRowContext(ctx, `SELECT returned FROM usage WHERE record_id = ?`, id).Scan(&n); err != nil && err != sql.ErrNoRows {
			t.Fatal(err)
		}
		return int(n.Int64)
	}

	search(5)
	testwait.WaitFor(t, "5 uses reach the file", func() bool { return returned() == 5 })
	search(3)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	afterKill := returned()
	if afterKill < 5 || afterKill > 8 {
		t.Fatalf("after SIGKILL: %d uses stored, want 5 (flushed before) to 8 (everything)", afterKill)
	}
	t.Logf("after SIGKILL: %d of 8 uses stored", afterKill)

	p = startHearth(t, bin, dir)
	rest = restTransport{&testDaemon{url: "http://" + p.addr}}
	search(4)
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("hearth did not stop cleanly: %v", err)
	}
	db, err := storage.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	u, err := db.Usage(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if u.Returned != afterKill+4 {
		t.Errorf("after a clean stop: %d uses, want %d: every use stored once", u.Returned, afterKill+4)
	}
}
