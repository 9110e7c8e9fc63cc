package storage_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

func TestDB_WALPolicy(t *testing.T) {
	storagetest.SQLiteOnly(t, "the WAL and its checkpoints")
	t.Run("OK", func(t *testing.T) {
		// With a limit of 256 KiB, checked after every group, the writer
		// loop truncates the WAL whenever a write leaves it larger.
		const limit = 256 << 10
		path := filepath.Join(t.TempDir(), "hearth.db")
		db, err := storage.Open(ctx, path, storage.WithWALPolicy(limit, 0))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		body := strings.Repeat("Words that take room in the write-ahead log. ", 100)
		for i := range 200 {
			if _, err := db.Store(ctx, rec(t, "global", fmt.Sprintf("Record %d", i), body)); err != nil {
				t.Fatal(err)
			}
		}
		st := db.CheckpointStats()
		if st.Count == 0 || st.Unfinished != 0 {
			t.Fatalf("CheckpointStats() = %+v, want checkpoints, all finished", st)
		}
		if st.Max <= 0 || st.Total < st.Max || st.LastAt.IsZero() {
			t.Errorf("durations not kept: %+v", st)
		}
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		// One store's frames at most can follow the last truncation.
		if fi.Size() > limit+256<<10 {
			t.Errorf("WAL is %d bytes, over the limit %d by more than one write", fi.Size(), limit)
		}
		if h := db.Health(); h.WALBytes != fi.Size() {
			t.Errorf("Health().WALBytes = %d, want %d", h.WALBytes, fi.Size())
		}
	})

	t.Run("ReaderHoldsOn", func(t *testing.T) {
		// A read that keeps its snapshot stops the WAL from being reset;
		// the checkpoint then waits walBusy, gives up, and is not tried
		// again before walRetry: no busy loop behind a reader.
		const limit = 64 << 10
		db, err := storage.Open(ctx, filepath.Join(t.TempDir(), "hearth.db"), storage.WithWALPolicy(limit, 0))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		first, err := db.Store(ctx, rec(t, "global", "Held", "A reader keeps its snapshot."))
		if err != nil {
			t.Fatal(err)
		}
		// The migrations left more than the limit in the WAL: the first
		// store's checkpoint truncates it, with no reader in the way.
		waitFor(t, "the first checkpoint", func() bool { return db.CheckpointStats().Count == 1 })
		release, held := make(chan struct{}), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- db.HoldRead(ctx, first.ID, held, release)
		}()
		<-held
		before := db.CheckpointStats()
		body := strings.Repeat("More words for the log. ", 200)
		start := time.Now()
		for i := range 40 {
			if _, err := db.Store(ctx, rec(t, "global", fmt.Sprintf("Behind the reader %d", i), body)); err != nil {
				t.Fatal(err)
			}
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		st := db.CheckpointStats()
		if st.Count-before.Count != 1 || st.Unfinished-before.Unfinished != 1 {
			t.Errorf("CheckpointStats() = %+v after %v behind a reader (before: %+v), want one more, unfinished", st, time.Since(start), before)
		}
		// The writer's busy timeout is its own again.
		var ms int
		if err := db.QueryRaw(ctx, false, `PRAGMA busy_timeout`, &ms); err != nil || ms != 5000 {
			t.Errorf("writer busy_timeout = %d, %v; want 5000", ms, err)
		}
	})
}

// TestDB_BackgroundCheckpoint: once a commit leaves a thousand pages in
// the WAL, a checkpoint copies them back on a connection of its own, not
// on the writer's; the WAL is then reused from its start, so it stops
// growing while writes go on.
func TestDB_BackgroundCheckpoint(t *testing.T) {
	storagetest.SQLiteOnly(t, "the WAL and its checkpoints")
	path := filepath.Join(t.TempDir(), "hearth.db")
	db, err := storage.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.ExecRaw(ctx, `CREATE TABLE big (b BLOB)`); err != nil {
		t.Fatal(err)
	}
	// About 1,300 pages in one commit.
	write := func() {
		t.Helper()
		if err := db.ExecRaw(ctx, `INSERT INTO big (b) VALUES (zeroblob(5000000))`); err != nil {
			t.Fatal(err)
		}
	}
	write()
	waitFor(t, "a background checkpoint", func() bool { return db.CheckpointStats().Passive >= 1 })
	if st := db.CheckpointStats(); st.PassiveFailed != 0 || st.Count != 0 {
		t.Errorf("CheckpointStats() = %+v, want one background checkpoint, finished, and no TRUNCATE", st)
	}
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	// Backfilled, the WAL starts over: a second write of the same size
	// leaves it as large as the first did.
	write()
	waitFor(t, "a second background checkpoint", func() bool { return db.CheckpointStats().Passive >= 2 })
	after, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if after.Size() > fi.Size()+64<<10 {
		t.Errorf("WAL grew from %d to %d bytes, want it reused", fi.Size(), after.Size())
	}
}

// TestDB_WALStartsOver: under steady writes from 8 callers the background
// checkpoint never finds the WAL wholly copied, as commits come while it
// copies; the writer loop copies what came meanwhile between two groups
// (catchUp), so the WAL starts over from the file's start, again and
// again, with no TRUNCATE checkpoint.
func TestDB_WALStartsOver(t *testing.T) {
	storagetest.SQLiteOnly(t, "the WAL and its checkpoints")
	db := storagetest.Open(t)
	body := strings.Repeat("Words that take room in the write-ahead log. ", 40)
	var next atomic.Int64
	stop := func() bool {
		st := db.CheckpointStats()
		return st.Restarts >= 3 || next.Load() >= 6000
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for !stop() {
				i := next.Add(1)
				if _, err := db.Store(ctx, rec(t, "global", fmt.Sprintf("Writer %d, record %d", w, i), body)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	// The writer answers a group's callers before it catches up with a
	// background checkpoint (afterWrite), so the last catch-up may still be
	// under way: one more write runs only once it is done.
	if _, err := db.Store(ctx, rec(t, "global", "After the writers", body)); err != nil {
		t.Fatal(err)
	}
	st := db.CheckpointStats()
	if st.Restarts < 3 || st.CaughtUp < 3 || st.CatchUpFailed != 0 || st.Count != 0 {
		t.Fatalf("CheckpointStats() = %+v after %d stores, want the WAL started over 3 times, the writer caught up, no TRUNCATE", st, next.Load())
	}
	// A WAL that grew past the limit (readers held it, a large write) is
	// trimmed to it when it starts over.
	var limit int64
	if err := db.QueryRaw(ctx, false, `PRAGMA journal_size_limit`, &limit); err != nil || limit != storage.WALLimit {
		t.Errorf("writer journal_size_limit = %d, %v; want %d", limit, err, storage.WALLimit)
	}
}
