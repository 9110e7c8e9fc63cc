package storage_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

func TestOpen(t *testing.T) {
	storagetest.SQLiteOnly(t, "opening a file: its directory, journal mode and pragmas")
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		db := storagetest.Open(t)
		for _, reader := range []bool{false, true} {
			var mode string
			if err := db.QueryRaw(ctx, reader, `PRAGMA journal_mode`, &mode); err != nil {
				t.Fatal(err)
			}
			if mode != "wal" {
				t.Errorf("reader=%v: journal_mode = %q, want wal", reader, mode)
			}
		}
		var fk, sync int
		if err := db.QueryRaw(ctx, false, `PRAGMA foreign_keys`, &fk); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRaw(ctx, false, `PRAGMA synchronous`, &sync); err != nil {
			t.Fatal(err)
		}
		if fk != 1 || sync != 1 {
			t.Errorf("foreign_keys, synchronous = %d, %d, want 1, 1 (on, normal)", fk, sync)
		}
	})

	t.Run("OKCreatesParentDir", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "a", "b", "hearth.db")
		storagetest.OpenPath(t, path)
		if _, err := os.Stat(path); err != nil {
			t.Errorf("got %v, want the database file", err)
		}
	})

	t.Run("OKReopen", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "hearth.db")
		db, err := storage.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		rec := storagetest.Store(t, db, storage.NewRecord{Title: text(t, "kept across reopen")})
		var want int
		if err := db.QueryRaw(ctx, false, `SELECT COUNT(*) FROM migrations`, &want); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}

		db = storagetest.OpenPath(t, path) // migrations run again: nothing to do
		var got int
		if err := db.QueryRaw(ctx, false, `SELECT COUNT(*) FROM migrations`, &got); err != nil {
			t.Fatal(err)
		}
		if got != want || got == 0 {
			t.Errorf("migrations after reopen: got %d, want %d (> 0)", got, want)
		}
		recs, err := db.Get(ctx, []string{rec.ID})
		if err != nil || len(recs) != 1 || recs[0].Title != "kept across reopen" {
			t.Fatalf("Get after reopen: got %v, %v, want the record", recs, err)
		}
		// A new id still sorts after the old one.
		rec2 := storagetest.Store(t, db, storage.NewRecord{})
		if rec2.ID <= rec.ID {
			t.Errorf("new id %s does not sort after %s", rec2.ID, rec.ID)
		}
	})

	t.Run("ErrEmptyPath", func(t *testing.T) {
		if _, err := storage.Open(ctx, ""); storage.ErrorCode(err) != storage.Invalid {
			t.Errorf("got %v, want Invalid", err)
		}
	})
}

func TestDB_Now(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.FixedZone("x", 3600))
	now := t0
	db.Now = func() time.Time { return now }

	rec := storagetest.Store(t, db, storage.NewRecord{})
	want := t0.UTC().Truncate(time.Millisecond)
	if !rec.CreatedAt.Equal(want) || !rec.UpdatedAt.Equal(want) || rec.CreatedAt.Location() != time.UTC {
		t.Errorf("created, updated = %v, %v, want %v (UTC)", rec.CreatedAt, rec.UpdatedAt, want)
	}

	now = t0.Add(time.Hour)
	title := text(t, "later")
	rec, err := db.Update(ctx, rec.ID, 1, storage.Changes{Title: &title}, "test")
	if err != nil {
		t.Fatal(err)
	}
	if !rec.CreatedAt.Equal(want) || !rec.UpdatedAt.Equal(want.Add(time.Hour)) {
		t.Errorf("created, updated = %v, %v, want %v, %v", rec.CreatedAt, rec.UpdatedAt, want, want.Add(time.Hour))
	}
	log, err := db.AuditLog(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !log[0].At.Equal(want.Add(time.Hour)) {
		t.Errorf("audit at = %v, want %v", log[0].At, want.Add(time.Hour))
	}

	// Ids sort by creation even when the clock steps back.
	now = t0.Add(-time.Hour)
	rec2 := storagetest.Store(t, db, storage.NewRecord{})
	if rec2.ID <= rec.ID {
		t.Errorf("id after clock step back %s does not sort after %s", rec2.ID, rec.ID)
	}
}

// TestDB_Concurrent runs writers from many goroutines at once: every write
// must commit (the single writer queues them; no SQLITE_BUSY), while readers
// keep reading.
func TestDB_Concurrent(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	const goroutines, each = 16, 20
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*each*3)
	for range goroutines {
		wg.Go(func() {
			for range each {
				rec, err := db.Store(ctx, storage.NewRecord{
					Namespace: "global", Type: storage.TypeNote, Confidence: 0.8,
					Title:   text(t, "concurrent write"),
					Content: text(t, "goroutine writes a record"),
					Writer:  "test", Source: storage.SourceStore, Status: storage.StatusActive,
				})
				if err != nil {
					errs <- err
					continue
				}
				st := storage.StatusCandidate
				if _, err := db.Update(ctx, rec.ID, 1, storage.Changes{Status: &st}, "test"); err != nil {
					errs <- err
				}
				if _, err := db.Search(ctx, storage.SearchQuery{Text: "concurrent record", Limit: 3}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent call: %v", err)
	}
	var n int
	if err := db.QueryRaw(ctx, false, `SELECT COUNT(*) FROM records WHERE revision = 2`, &n); err != nil {
		t.Fatal(err)
	}
	if n != goroutines*each {
		t.Errorf("records at revision 2: got %d, want %d", n, goroutines*each)
	}
	// Ids sort in commit order.
	var bySeq, byID string
	if err := db.QueryRaw(ctx, false, `SELECT string_agg(id, ',') FROM (SELECT id FROM records ORDER BY seq) AS r`, &bySeq); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRaw(ctx, false, `SELECT string_agg(id, ',') FROM (SELECT id FROM records ORDER BY id) AS r`, &byID); err != nil {
		t.Fatal(err)
	}
	if bySeq != byID {
		t.Errorf("ids do not sort in creation order")
	}
}

func TestErrorCode(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  error
		want storage.Code
	}{
		{nil, ""},
		{&storage.Error{Code: storage.NotFound}, storage.NotFound},
		{fmt.Errorf("wrapped: %w", &storage.Error{Code: storage.Conflict}), storage.Conflict},
		{errors.New("disk on fire"), storage.Internal},
	} {
		if got := storage.ErrorCode(tt.err); got != tt.want {
			t.Errorf("ErrorCode(%v): got %q, want %q", tt.err, got, tt.want)
		}
	}
	e := &storage.Error{Code: storage.Invalid, Field: "changes.status", Message: "bad"}
	if got, want := e.Error(), "changes.status: bad"; got != want {
		t.Errorf("Error(): got %q, want %q", got, want)
	}
}

// TestOpen_Private: the database, its WAL and its shared-memory file are
// 0600 whatever the umask, also when an older start left them wider.
func TestOpen_Private(t *testing.T) {
	storagetest.SQLiteOnly(t, "the database file's permissions")
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "hearth.db")
	check := func(t *testing.T) {
		t.Helper()
		for _, f := range []string{path, path + "-wal", path + "-shm"} {
			fi, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: mode %v, want 0600", filepath.Base(f), fi.Mode().Perm())
			}
		}
	}
	db := storagetest.OpenPath(t, path)
	storagetest.Store(t, db, storage.NewRecord{Title: storagetest.Text(t, "t"), Content: storagetest.Text(t, "c")})
	check(t)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		_ = os.Chmod(f, 0o644)
	}
	db2 := storagetest.OpenPath(t, path)
	storagetest.Store(t, db2, storage.NewRecord{Title: storagetest.Text(t, "t2"), Content: storagetest.Text(t, "c2")})
	check(t)
}

// TestClose_LeavesNoLog: a clean Close checkpoints the log into the
// database and removes it, which syncs both to the disk: what DOCS.md ("What
// a crash can lose") promises of a stop. Commits themselves do not wait for
// the disk (synchronous=NORMAL, TestOpen).
func TestClose_LeavesNoLog(t *testing.T) {
	storagetest.SQLiteOnly(t, "the WAL file")
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hearth.db")
	db := storagetest.OpenPath(t, path)
	storagetest.Store(t, db, storage.NewRecord{Title: storagetest.Text(t, "t"), Content: storagetest.Text(t, "c")})
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("before Close: the log holds nothing (%v): the test proves nothing", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Close: %s-wal is still there (%v)", filepath.Base(path), err)
	}
}

// TestOpen_ReaderCache: read connections keep a page cache of 512 KiB,
// not SQLite's 2 MiB, and the writer keeps the default (issue #44: the
// resident memory of a store grows with its connections' caches).
func TestOpen_ReaderCache(t *testing.T) {
	storagetest.SQLiteOnly(t, "SQLite's page cache")
	t.Parallel()
	db := storagetest.Open(t)
	var reader, writer int
	if err := db.QueryRaw(ctx, true, `PRAGMA cache_size`, &reader); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRaw(ctx, false, `PRAGMA cache_size`, &writer); err != nil {
		t.Fatal(err)
	}
	if reader != -512 || writer != -2000 {
		t.Errorf("cache_size: reader %d, writer %d; want -512 and SQLite's -2000", reader, writer)
	}
}
