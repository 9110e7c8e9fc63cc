package storage_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// fillStore bulk-stores n records in namespace ns.
func fillStore(tb testing.TB, db *storage.DB, ns string, n int) {
	tb.Helper()
	const batch = 500
	for i := 0; i < n; i += batch {
		var recs []storage.NewRecord
		for j := i; j < min(n, i+batch); j++ {
			recs = append(recs, rec(tb, ns, fmt.Sprintf("Filler record %d", j),
				fmt.Sprintf("Filler content number %d about caching, queues and the deploy pipeline.", j)))
		}
		if err := db.StoreMany(ctx, recs); err != nil {
			tb.Fatal(err)
		}
	}
}

// bulkRecords fill the store before the backup test's writers start, so
// that the copy takes long enough for writes to land while it runs.
const bulkRecords = 500

// TestDB_Backup holds that a backup taken while 8 writers store records is
// a sound database holding every write acknowledged before it started.
func TestDB_Backup(t *testing.T) {
	storagetest.SQLiteOnly(t, "the online backup of a database file")
	t.Run("OKDuringWrites", func(t *testing.T) {
		dir := t.TempDir()
		db := storagetest.OpenPath(t, filepath.Join(dir, "hearth.db"))
		fillStore(t, db, "github/acme/bulk", bulkRecords)

		var (
			mu      sync.Mutex
			acked   []string // ids whose Store returned
			during  atomic.Int64
			running atomic.Bool
			stop    = make(chan struct{})
			wg      sync.WaitGroup
			errs    = make(chan error, 8)
		)
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
					r, err := db.Store(ctx, rec(t, "github/acme/burst", fmt.Sprintf("Writer %d write %d", w, i), "Written while a backup runs."))
					if err != nil {
						errs <- err
						return
					}
					if running.Load() {
						during.Add(1)
					}
					mu.Lock()
					acked = append(acked, r.ID)
					mu.Unlock()
				}
			}()
		}
		// Let the writers get going, then note what was acknowledged.
		for {
			mu.Lock()
			n := len(acked)
			mu.Unlock()
			if n >= 80 {
				break
			}
			poll()
		}
		mu.Lock()
		before := append([]string(nil), acked...)
		mu.Unlock()
		running.Store(true)
		out := filepath.Join(dir, "backups", "b.db")
		info, err := db.Backup(ctx, out, "admin")
		running.Store(false)
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("writer: %v", err)
		}
		if err != nil {
			t.Fatalf("Backup: %v", err)
		}
		if during.Load() == 0 {
			t.Errorf("no write was acknowledged while the backup ran: the test proves nothing")
		}
		if info.Path != out || info.Bytes <= 0 || info.Records < bulkRecords+len(before) {
			t.Errorf("info = %+v, want %s with at least %d records", info, out, bulkRecords+len(before))
		}
		for _, suffix := range []string{".tmp", "-wal", "-shm", "-journal"} {
			if _, err := os.Stat(out + suffix); err == nil {
				t.Errorf("%s left behind: a backup is one file", out+suffix)
			}
		}
		if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("backup mode: %v, %v, want 0600", fi, err)
		}
		if n, err := storage.Verify(ctx, out); err != nil || n != info.Records {
			t.Errorf("Verify: %d, %v, want %d records", n, err, info.Records)
		}

		restored := filepath.Join(t.TempDir(), "hearth.db")
		if _, err := storage.Restore(ctx, restored, out, filepath.Join(filepath.Dir(restored), "aside")); err != nil {
			t.Fatalf("Restore: %v", err)
		}
		rdb := storagetest.OpenPath(t, restored)
		got, err := rdb.Get(ctx, before)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(before) {
			t.Errorf("restored store holds %d of the %d writes acknowledged before the backup", len(got), len(before))
		}
		at, ok, err := db.LastBackup(ctx)
		if err != nil || !ok || at.IsZero() {
			t.Errorf("LastBackup: %v %v %v, want the backup's time", at, ok, err)
		}
	})

	t.Run("ErrExists", func(t *testing.T) {
		db := storagetest.Open(t)
		out := filepath.Join(t.TempDir(), "taken.db")
		os.WriteFile(out, []byte("mine"), 0o600)
		if _, err := db.Backup(ctx, out, "admin"); storage.ErrorCode(err) != storage.Invalid {
			t.Errorf("got %v, want Invalid", err)
		}
		if b, _ := os.ReadFile(out); string(b) != "mine" {
			t.Errorf("the existing file was overwritten")
		}
		if _, ok, _ := db.LastBackup(ctx); ok {
			t.Errorf("LastBackup after a refused backup: want none")
		}
	})
}

// poll waits a moment between two looks at what other goroutines did.
func poll() { time.Sleep(time.Millisecond) }

func TestBackupFile(t *testing.T) {
	storagetest.SQLiteOnly(t, "the backup of a database file")
	t.Run("OK", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "hearth.db")
		db, err := storage.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		fillStore(t, db, "global", 50)
		db.Close()
		out := filepath.Join(dir, "copy.db")
		info, err := storage.BackupFile(ctx, path, out)
		if err != nil {
			t.Fatal(err)
		}
		if info.Records != 50 {
			t.Errorf("records = %d, want 50", info.Records)
		}
	})
	t.Run("OKAfterCrash", func(t *testing.T) {
		// A server killed with its writes in the WAL: the copy recovers
		// them, as the next start would.
		path := filepath.Join(t.TempDir(), "hearth.db")
		cmd := holder(t, path, 40)
		cmd.Process.Kill()
		cmd.Wait()
		if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
			t.Fatalf("no WAL left by the killed holder: %v", err)
		}
		info, err := storage.BackupFile(ctx, path, filepath.Join(t.TempDir(), "copy.db"))
		if err != nil || info.Records != 40 {
			t.Fatalf("BackupFile after a crash: %+v, %v; want the 40 records", info, err)
		}
	})
	t.Run("ErrMissing", func(t *testing.T) {
		if _, err := storage.BackupFile(ctx, filepath.Join(t.TempDir(), "none.db"), filepath.Join(t.TempDir(), "x.db")); err == nil {
			t.Errorf("got nil, want an error for a missing source")
		}
	})
}

func TestRestore(t *testing.T) {
	storagetest.SQLiteOnly(t, "backup and restore copy the database file; PostgreSQL's are pg_dump and the server's tools")
	// backup makes a verified copy of a store holding one record per title.
	backup := func(t *testing.T, titles ...string) string {
		db := storagetest.Open(t)
		for _, s := range titles {
			storagetest.Store(t, db, storage.NewRecord{Title: text(t, s)})
		}
		out := filepath.Join(t.TempDir(), "b.db")
		if _, err := db.Backup(ctx, out, "admin"); err != nil {
			t.Fatal(err)
		}
		return out
	}
	t.Run("OK", func(t *testing.T) {
		file := backup(t, "from the backup")
		dir := t.TempDir()
		path := filepath.Join(dir, "hearth.db")
		db, err := storage.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		storagetest.Store(t, db, storage.NewRecord{Title: text(t, "current one")})
		db.Close()
		aside := filepath.Join(dir, "aside")
		info, err := storage.Restore(ctx, path, file, aside)
		if err != nil {
			t.Fatal(err)
		}
		if info.Records != 1 || info.Aside != aside {
			t.Errorf("info = %+v", info)
		}
		if _, err := os.Stat(filepath.Join(aside, "hearth.db")); err != nil {
			t.Errorf("old database not kept aside: %v", err)
		}
		db = storagetest.OpenPath(t, path)
		var got string
		if err := db.QueryRaw(ctx, true, `SELECT group_concat(title) FROM records`, &got); err != nil {
			t.Fatal(err)
		}
		if got != "from the backup" {
			t.Errorf("restored titles = %q, want the backup's", got)
		}
		// The aside copy is whole: it opens with the record it had.
		old := storagetest.OpenPath(t, filepath.Join(aside, "hearth.db"))
		old.QueryRaw(ctx, true, `SELECT group_concat(title) FROM records`, &got)
		if got != "current one" {
			t.Errorf("aside titles = %q, want the replaced store's", got)
		}
	})
	t.Run("ErrLocked", func(t *testing.T) {
		file := backup(t, "x")
		path := filepath.Join(t.TempDir(), "hearth.db")
		db := storagetest.OpenPath(t, path)
		storagetest.Store(t, db, storage.NewRecord{Title: text(t, "live")})
		before := snapshot(t, db)
		_, err := storage.Restore(ctx, path, file, filepath.Join(t.TempDir(), "aside"))
		if !errors.Is(err, storage.ErrLocked) || !strings.Contains(err.Error(), fmt.Sprint(os.Getpid())) {
			t.Fatalf("got %v, want ErrLocked naming this process", err)
		}
		if after := snapshot(t, db); after != before {
			t.Errorf("a refused restore changed the live store")
		}
	})
	t.Run("ErrNotADatabase", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.db")
		os.WriteFile(bad, []byte(strings.Repeat("not sqlite ", 1000)), 0o600)
		path := filepath.Join(t.TempDir(), "hearth.db")
		db, _ := storage.Open(ctx, path)
		db.Close()
		if _, err := storage.Restore(ctx, path, bad, filepath.Join(t.TempDir(), "aside")); err == nil {
			t.Fatalf("got nil, want a refusal")
		}
		if _, err := os.Stat(path + ".restore"); err == nil {
			t.Errorf("temporary copy left behind")
		}
		storagetest.OpenPath(t, path) // still there and sound
	})
	t.Run("ErrNewerDatabase", func(t *testing.T) {
		file := backup(t, "x")
		// A copy whose migrations include one this build lacks.
		newer := filepath.Join(t.TempDir(), "newer.db")
		copyDB(t, file, newer, `INSERT INTO migrations (name, applied_at) VALUES ('9999_future.sql', 0)`)
		if _, err := storage.Verify(ctx, newer); err == nil || !strings.Contains(err.Error(), "newer Hearth") {
			t.Errorf("Verify: got %v, want a refusal naming a newer Hearth", err)
		}
	})
	t.Run("ErrBrokenIndex", func(t *testing.T) {
		file := backup(t, "indexed title")
		broken := filepath.Join(t.TempDir(), "broken.db")
		// The index loses its rows behind the records' back (dropping its
		// trigger would change the schema, which Verify refuses first).
		copyDB(t, file, broken, `INSERT INTO records_fts (records_fts) VALUES ('delete-all')`)
		if _, err := storage.Verify(ctx, broken); err == nil || !strings.Contains(err.Error(), "full-text") {
			t.Errorf("Verify: got %v, want the full-text index refused", err)
		}
	})
}

// copyDB copies a database file and runs stmts on the copy, outside the
// storage API.
func copyDB(t *testing.T, src, dst string, stmts ...string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := storage.Open(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts {
		if err := db.ExecRaw(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// holder starts a child process that opens the database at path, stores n
// records and holds it open until the test kills it.
func holder(t *testing.T, path string, n int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestAcquireLock$")
	cmd.Env = append(os.Environ(), "HEARTH_LOCK_HOLDER="+path, fmt.Sprintf("HEARTH_LOCK_HOLDER_STORE=%d", n))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "holding\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child: %q", line)
	}
	return cmd
}

// TestAcquireLock holds the lock's two promises: a second holder is refused
// while the first lives, and a holder that dies (kill -9) leaves nothing
// that refuses the next one.
func TestAcquireLock(t *testing.T) {
	storagetest.SQLiteOnly(t, "the database file's lock")
	if path := os.Getenv("HEARTH_LOCK_HOLDER"); path != "" {
		// The child: hold the database open until killed, after storing
		// the records asked for (they stay in the WAL: no checkpoint runs
		// at this size, and a kill leaves no clean close).
		db, err := storage.Open(context.Background(), path)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		if n, _ := strconv.Atoi(os.Getenv("HEARTH_LOCK_HOLDER_STORE")); n > 0 {
			fillStore(t, db, "global", n)
		}
		fmt.Println("holding")
		select {}
	}
	t.Run("ErrLockedInProcess", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "hearth.db")
		storagetest.OpenPath(t, path)
		if _, err := storage.Open(ctx, path); !errors.Is(err, storage.ErrLocked) {
			t.Errorf("second Open: got %v, want ErrLocked", err)
		}
	})
	t.Run("OKAfterClose", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "hearth.db")
		db, err := storage.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		storagetest.OpenPath(t, path)
	})
	t.Run("OKAfterCrash", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "hearth.db")
		cmd := holder(t, path, 0)
		_, err := storage.AcquireLock(path)
		if !errors.Is(err, storage.ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", cmd.Process.Pid)) {
			t.Errorf("while the child holds it: got %v, want ErrLocked naming pid %d", err, cmd.Process.Pid)
		}
		cmd.Process.Kill() // SIGKILL: no cleanup runs
		cmd.Wait()
		if _, err := os.Stat(storage.LockPath(path)); err != nil {
			t.Fatalf("lock file: %v, want it left behind by the killed holder", err)
		}
		storagetest.OpenPath(t, path) // taken at once
		if _, err := storage.Open(ctx, path); !errors.Is(err, storage.ErrLocked) {
			t.Errorf("after the crash the lock works again: got %v", err)
		}
	})
}
