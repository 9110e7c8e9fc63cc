package workers_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/workers"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/faultvfs"
	"github.com/hearth-memory/hearth/storage/storagetest"
	"github.com/hearth-memory/hearth/storage/testwait"
)

// lockedBuffer is a log sink safe for the runner's goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

func TestWorkers_MaintenanceChecksIntegrity(t *testing.T) {
	storagetest.SQLiteOnly(t, "the nightly integrity check reads SQLite's file; PostgreSQL's integrity is the server's")
	t.Parallel()
	db, clk := setup(t, time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC))
	w := newWorkers(t, db, nil)
	prepare(t, w)
	clk.Set(time.Date(2026, 11, 3, 3, 0, 0, 0, time.UTC))
	if !runOnce(t, w) {
		t.Fatal("the due maintenance run did not run")
	}
	rows := auditActions(t, db, storage.ActionIntegrity)
	if len(rows) != 1 || !strings.HasPrefix(rows[0].Detail.String(), "quick_check ok, full-text index ok") {
		t.Fatalf("integrity audit rows = %+v, want one, ok", rows)
	}
	if chk, ok := db.LastIntegrityCheck(); !ok || chk.Damage != nil {
		t.Errorf("LastIntegrityCheck() = %+v, %v", chk, ok)
	}
}

func TestWorkers_FullDisk(t *testing.T) {
	t.Parallel()
	// While the disk is full the runner cannot lease a due job: it says so
	// once and waits longer each round, then resumes when space is back.
	v := faultvfs.Register("workers-full-" + t.Name() + time.Now().Format(time.RFC3339Nano))
	db, err := storage.Open(ctx, filepath.Join(t.TempDir(), "hearth.db"), storage.WithVFS(v.Name()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.SetFull(false); db.Close() })
	var log lockedBuffer
	w := newWorkers(t, db, func(c *workers.Config) {
		c.Poll = 10 * time.Millisecond
		c.Log = slog.New(slog.NewTextHandler(&log, nil))
	})
	done := make(chan struct{})
	w.Handle("work", func(ctx context.Context, job *storage.Job) (workers.Effects, error) {
		return func(ctx context.Context, tx *storage.JobTx) error { close(done); return nil }, nil
	})
	if err := w.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	v.SetFull(true)
	if _, _, err := db.EnqueueJob(ctx, storage.NewJob{Kind: "work"}); storage.ErrorCode(err) != storage.Full {
		t.Fatalf("enqueue on a full disk: %v, want Full", err)
	}
	v.SetFull(false)
	if _, _, err := db.EnqueueJob(ctx, storage.NewJob{Kind: "work"}); err != nil {
		t.Fatal(err)
	}
	v.SetFull(true)
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	before := v.Refused()
	testwait.WaitFor(t, "the runner tries to lease", func() bool { return v.Refused()-before >= 4 })
	if n := log.count("job queue waits"); n != 1 {
		t.Errorf("logged %d times that the queue waits, want once", n)
	}
	if n := log.count("level=ERROR"); n != 0 {
		t.Errorf("%d errors logged for a full disk, want none", n)
	}
	v.SetFull(false)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the job did not run once space was back")
	}
}

func TestWorkers_StartOnAFullDisk(t *testing.T) {
	t.Parallel()
	// A server that starts on a full disk must come up to serve reads:
	// Start does not fail for want of space to schedule maintenance, and
	// the runner schedules it once space is back.
	v := faultvfs.Register("workers-start-full-" + time.Now().Format(time.RFC3339Nano))
	db, err := storage.Open(ctx, filepath.Join(t.TempDir(), "hearth.db"), storage.WithVFS(v.Name()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.SetFull(false); db.Close() })
	var log lockedBuffer
	w := newWorkers(t, db, func(c *workers.Config) {
		c.Poll = 10 * time.Millisecond
		c.Log = slog.New(slog.NewTextHandler(&log, nil))
	})
	v.SetFull(true)
	if err := w.Start(ctx); err != nil {
		t.Fatalf("Start on a full disk: %v, want it to start", err)
	}
	defer w.Stop()
	if n := log.count("job queue waits"); n != 1 {
		t.Errorf("logged %d times that the queue waits, want once", n)
	}
	if jobs, err := db.Jobs(ctx, storage.KindMaintenance, ""); err != nil || len(jobs) != 0 {
		t.Fatalf("maintenance jobs on a full disk = %d, %v; want none", len(jobs), err)
	}
	before := v.Refused()
	testwait.WaitFor(t, "the runner tries again", func() bool { return v.Refused() != before })
	v.SetFull(false)
	testwait.WaitFor(t, "a maintenance job and a resume logged once space is back", func() bool {
		jobs, err := db.Jobs(ctx, storage.KindMaintenance, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) > 1 {
			t.Fatalf("maintenance jobs once space was back = %d, want 1", len(jobs))
		}
		return len(jobs) == 1 && log.count("job queue resumes") > 0
	})
	if n := log.count("level=ERROR"); n != 0 {
		t.Errorf("%d errors logged for a full disk, want none", n)
	}
	if n := log.count("job queue resumes"); n != 1 {
		t.Errorf("logged %d times that the queue resumes, want once", n)
	}
}
