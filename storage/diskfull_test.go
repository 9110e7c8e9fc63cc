package storage_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/faultvfs"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

var vfsSeq atomic.Int64

// openFaulty opens a store in a temp dir through a new fault VFS.
func openFaulty(t *testing.T, opts ...storage.Option) (*storage.DB, *faultvfs.VFS) {
	t.Helper()
	v := faultvfs.Register(fmt.Sprintf("faulty-%d", vfsSeq.Add(1)))
	db, err := storage.Open(ctx, filepath.Join(t.TempDir(), "hearth.db"), append(opts, storage.WithVFS(v.Name()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.SetFull(false); db.Close() })
	return db, v
}

// auditRows returns the audit rows of action, oldest first.
func auditRows(t *testing.T, db *storage.DB, action storage.Action) []storage.AuditEntry {
	t.Helper()
	all, err := db.AuditLog(ctx, 500)
	if err != nil {
		t.Fatal(err)
	}
	var out []storage.AuditEntry
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Action == action {
			out = append(out, all[i])
		}
	}
	return out
}

// waitFor polls cond until it holds or 20 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, not waiting for time
	}
}

func TestDB_DiskFull(t *testing.T) {
	storagetest.SQLiteOnly(t, "a full disk under the database file (faultvfs, a SQLite VFS)")
	t.Run("OK", func(t *testing.T) {
		db, v := openFaulty(t)
		kept, err := db.Store(ctx, rec(t, "global", "Stored before the disk filled", "It must stay readable."))
		if err != nil {
			t.Fatal(err)
		}
		v.SetFull(true)

		// Writes are refused as Full, saying why and what to do.
		for i := range 5 {
			_, err := db.Store(ctx, rec(t, "global", fmt.Sprintf("Refused %d", i), "The disk is full."))
			e := wantErr(t, err, storage.Full, "")
			for _, want := range []string{"full", filepath.Dir(db.Path()), "resume once space is freed"} {
				if !strings.Contains(e.Message, want) {
					t.Errorf("message %q lacks %q", e.Message, want)
				}
			}
		}
		if v.Refused() == 0 {
			t.Fatal("the VFS refused no write: the test did not reach the disk")
		}
		d, ok := db.DiskFull()
		if !ok || d.Refused != 5 {
			t.Fatalf("DiskFull() = %+v, %v; want 5 refused", d, ok)
		}

		// Reads go on.
		if got := get(t, db, kept.ID); got.Title != "Stored before the disk filled" {
			t.Errorf("read during a full disk: got %q", got.Title)
		}
		hits, err := db.Search(ctx, storage.SearchQuery{Text: "readable", Namespaces: []string{"global"}, Limit: 5})
		if err != nil || len(hits) != 1 {
			t.Errorf("search during a full disk: %d hits, %v", len(hits), err)
		}

		// Space back: the next write succeeds, and one audit row tells the
		// episode with its count.
		v.SetFull(false)
		if _, err := db.Store(ctx, rec(t, "global", "Stored after space came back", "Writes resume.")); err != nil {
			t.Fatalf("store after space came back: %v", err)
		}
		// The row commits before the episode ends in memory (recoverFull
		// clears it once the write returns): wait for both.
		waitFor(t, "the disk-full audit row", func() bool { return len(auditRows(t, db, storage.ActionRefuseDiskFull)) > 0 })
		waitFor(t, "the episode to end", func() bool { _, ok := db.DiskFull(); return !ok })
		rows := auditRows(t, db, storage.ActionRefuseDiskFull)
		if len(rows) != 1 {
			t.Fatalf("got %d disk-full audit rows, want 1", len(rows))
		}
		if got := rows[0].Detail.String(); !strings.HasPrefix(got, "5 writes refused for a full disk from ") || !strings.Contains(got, "(store 5)") {
			t.Errorf("audit detail = %q, want 5 store writes refused", got)
		}
		if rows[0].Client != storage.SystemClient {
			t.Errorf("audit client = %q, want %q", rows[0].Client, storage.SystemClient)
		}
	})

	t.Run("GroupFailsTogether", func(t *testing.T) {
		// Writes that share a group share its transaction: when the
		// commit finds the disk full, every one is refused as Full.
		db, v := openFaulty(t)
		v.SetFull(true)
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = db.Store(ctx, rec(t, "global", fmt.Sprintf("Concurrent %d", i), "All refused."))
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if storage.ErrorCode(err) != storage.Full {
				t.Errorf("write %d: %v, want Full", i, err)
			}
		}
		if d, _ := db.DiskFull(); d.Refused != len(errs) {
			t.Errorf("refused = %d, want %d", d.Refused, len(errs))
		}
	})

	t.Run("FlusherBacksOff", func(t *testing.T) {
		// Counted uses wait in memory while the disk is full; the flusher
		// retries with a doubling wait, and each retry first probes with
		// the episode's audit row. Timers never fire early, so the
		// elapsed time bounds how many tries there can have been.
		const lo, hi = 20 * time.Millisecond, 160 * time.Millisecond
		db, v := openFaulty(t, storage.WithFullRetry(lo, hi))
		r, err := db.Store(ctx, rec(t, "global", "Counted", "Its uses wait."))
		if err != nil {
			t.Fatal(err)
		}
		v.SetFull(true)
		if _, err := db.Store(ctx, rec(t, "global", "Refused", "Starts the episode.")); storage.ErrorCode(err) != storage.Full {
			t.Fatalf("store: %v, want Full", err)
		}
		start := time.Now()
		before := db.FullTries()
		db.NoteReturned([]string{r.ID})
		waitFor(t, "six tries", func() bool { return db.FullTries()-before >= 6 })
		elapsed := time.Since(start)
		tries := db.FullTries() - before
		// With waits lo, 2lo, 4lo, hi, hi, … after the first try, the
		// k-th comes no sooner than the sum of k-1 of them.
		var least time.Duration
		for k, w := int64(1), lo; k < tries; k++ {
			least += w
			w = min(2*w, hi)
		}
		if elapsed < least {
			t.Errorf("%d tries in %v: faster than the backoff allows (%v)", tries, elapsed, least)
		}

		v.SetFull(false)
		waitFor(t, "the uses stored", func() bool {
			var n int
			_ = db.QueryRaw(ctx, false, `SELECT COALESCE(SUM(returned), 0) FROM usage WHERE record_id = '`+r.ID+`'`, &n)
			return n == 1
		})
		rows := auditRows(t, db, storage.ActionRefuseDiskFull)
		if len(rows) != 1 {
			t.Fatalf("got %d disk-full audit rows, want 1", len(rows))
		}
		// The probes are not refusals; the flusher's own tries are.
		if got := rows[0].Detail.String(); !strings.Contains(got, "store 1") {
			t.Errorf("audit detail = %q, want the refused store counted", got)
		}
	})
}

// TestDB_DiskFull_Tmpfs fills a real file system: a tmpfs mounted for the
// test, with a ballast file that is deleted to free space.
func TestDB_DiskFull_Tmpfs(t *testing.T) {
	storagetest.SQLiteOnly(t, "the full-disk episode of a database file on a local file system")
	if testing.Short() {
		t.Skip("fills a file system")
	}
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root; TestDB_DiskFull covers the path through the fault VFS")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := storage.Open(ctx, filepath.Join(dir, "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })

	var first string
	body := strings.Repeat("Filling the disk with words that are not compressible enough. ", 40)
	refused := 0
	for i := 0; refused == 0; i++ {
		if i > 5000 {
			t.Fatal("the disk never filled")
		}
		r, err := db.Store(ctx, rec(t, "global", fmt.Sprintf("Filler %d", i), body))
		switch {
		case err == nil:
			if first == "" {
				first = r.ID
			}
		case storage.ErrorCode(err) == storage.Full:
			refused++
		default:
			t.Fatalf("store %d: %v, want success or Full", i, err)
		}
	}
	for range 3 {
		if _, err := db.Store(ctx, rec(t, "global", "More", body)); storage.ErrorCode(err) != storage.Full {
			t.Fatalf("store on a full disk: %v, want Full", err)
		}
		refused++
	}
	if space := db.DiskSpace(); !space.Known || space.Free > 64<<10 {
		t.Errorf("DiskSpace() = %+v on a full tmpfs", space)
	}
	if got := get(t, db, first); got.ID != first {
		t.Fatalf("read on a full disk: %v", got)
	}

	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Store(ctx, rec(t, "global", "After", "Space is back.")); err != nil {
		t.Fatalf("store after freeing space: %v", err)
	}
	waitFor(t, "the disk-full audit row", func() bool { return len(auditRows(t, db, storage.ActionRefuseDiskFull)) == 1 })
	if got := auditRows(t, db, storage.ActionRefuseDiskFull)[0].Detail.String(); !strings.HasPrefix(got, fmt.Sprintf("%d writes refused", refused)) {
		t.Errorf("audit detail = %q, want %d refused", got, refused)
	}
	chk, err := db.CheckIntegrity(ctx)
	if err != nil || chk.Damage != nil || chk.Repaired != "" {
		t.Errorf("integrity after a full disk: %+v, %v", chk, err)
	}

	// A disk full before the store opens: SQLite cannot even open the WAL,
	// and the error says why.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(ballast)
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = f.Write(make([]byte, 64<<10))
	}
	f.Close()
	db2, err := storage.Open(ctx, filepath.Join(dir, "hearth.db"))
	if err == nil {
		db2.Close()
		t.Fatal("Open succeeded on a full disk")
	}
	for _, want := range []string{filepath.Join(dir, "hearth.db"), "the disk is full", "free space there and start again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open on a full disk: %q lacks %q", err, want)
		}
	}
}
