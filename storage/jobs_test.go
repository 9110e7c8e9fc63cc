package storage_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

var kinds = []string{"test"}

func enqueue(tb testing.TB, db *storage.DB, nj storage.NewJob) *storage.Job {
	tb.Helper()
	if nj.Kind == "" {
		nj.Kind = "test"
	}
	j, _, err := db.EnqueueJob(ctx, nj)
	if err != nil {
		tb.Fatalf("EnqueueJob: %v", err)
	}
	return j
}

func lease(tb testing.TB, db *storage.DB, owner string) *storage.Job {
	tb.Helper()
	j, err := db.LeaseJob(ctx, owner, kinds, time.Minute)
	if err != nil {
		tb.Fatalf("LeaseJob: %v", err)
	}
	return j
}

func job(tb testing.TB, db *storage.DB, id string) *storage.Job {
	tb.Helper()
	j, err := db.Job(ctx, id)
	if err != nil {
		tb.Fatalf("Job(%s): %v", id, err)
	}
	return j
}

func TestDB_EnqueueJob(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		db := storagetest.Open(t)
		newClock(db, t0)
		j := enqueue(t, db, storage.NewJob{Payload: text(t, `{"a": 1}`)})
		got := job(t, db, j.ID)
		if got.State != storage.JobQueued || got.Payload != `{"a": 1}` || got.MaxAttempts != storage.DefaultMaxAttempts ||
			!got.RunAfter.Equal(t0) || got.Attempts != 0 {
			t.Errorf("job = %+v", got)
		}
		if e := enqueue(t, db, storage.NewJob{}); job(t, db, e.ID).Payload != "{}" {
			t.Errorf("empty payload not {}")
		}
	})
	t.Run("Key", func(t *testing.T) {
		db := storagetest.Open(t)
		a, created, err := db.EnqueueJob(ctx, storage.NewJob{Kind: "test", Key: "slot-1"})
		if err != nil || !created {
			t.Fatal(err, created)
		}
		b, created, err := db.EnqueueJob(ctx, storage.NewJob{Kind: "test", Key: "slot-1"})
		if err != nil || created || b.ID != a.ID {
			t.Errorf("second enqueue: %+v created=%v err=%v, want job %s", b, created, err, a.ID)
		}
		if n := countRows(t, db, `SELECT COUNT(*) FROM jobs`); n != 1 {
			t.Errorf("%d jobs, want 1", n)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		db := storagetest.Open(t)
		for field, nj := range map[string]storage.NewJob{
			"kind":         {Kind: ""},
			"payload":      {Kind: "test", Payload: text(t, "not json")},
			"max_attempts": {Kind: "test", MaxAttempts: -1},
			"key":          {Kind: "test", Key: strings.Repeat("k", 201)},
		} {
			_, _, err := db.EnqueueJob(ctx, nj)
			wantErr(t, err, storage.Invalid, field)
		}
	})
}

func TestDB_LeaseJob(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		db := storagetest.Open(t)
		clk := newClock(db, t0)
		later := enqueue(t, db, storage.NewJob{RunAfter: t0.Add(time.Hour)})
		first := enqueue(t, db, storage.NewJob{})
		enqueue(t, db, storage.NewJob{Kind: "other"})

		j := lease(t, db, "w1")
		if j == nil || j.ID != first.ID || j.State != storage.JobLeased || j.Attempts != 1 || j.LeaseOwner != "w1" ||
			!j.LeaseExpiry.Equal(t0.Add(time.Minute)) {
			t.Fatalf("lease = %+v, want %s leased", j, first.ID)
		}
		if got := job(t, db, j.ID); got.State != storage.JobLeased || got.Attempts != 1 {
			t.Errorf("stored = %+v", got)
		}
		if j := lease(t, db, "w1"); j != nil {
			t.Errorf("leased %+v; nothing else is due", j)
		}
		if err := db.CompleteJob(ctx, j, nil); err != nil {
			t.Fatal(err)
		}
		clk.Add(time.Hour)
		if j := lease(t, db, "w2"); j == nil || j.ID != later.ID {
			t.Errorf("lease at run_after = %+v, want %s", j, later.ID)
		}
	})

	t.Run("ExpiredLease", func(t *testing.T) {
		db := storagetest.Open(t)
		clk := newClock(db, t0)
		enqueue(t, db, storage.NewJob{})
		a := lease(t, db, "w1")
		clk.Add(time.Minute - time.Millisecond)
		if j := lease(t, db, "w2"); j != nil {
			t.Fatalf("took a live lease: %+v", j)
		}
		clk.Add(time.Millisecond)
		b := lease(t, db, "w2")
		if b == nil || b.ID != a.ID || b.Attempts != 2 || b.LeaseOwner != "w2" {
			t.Fatalf("re-lease = %+v", b)
		}
		// The first worker lost its lease: its completion is refused and
		// its effects are not written.
		ran := false
		err := db.CompleteJob(ctx, a, func(ctx context.Context, tx *storage.JobTx) error { ran = true; return nil })
		wantErr(t, err, storage.Conflict, "job")
		if ran {
			t.Error("effects ran without the lease")
		}
		wantErr(t, db.FailJob(ctx, a, text(t, "late"), 0), storage.Conflict, "job")
		if err := db.CompleteJob(ctx, b, nil); err != nil {
			t.Fatalf("complete by the new holder: %v", err)
		}
	})

	t.Run("ExpiredLeaseNoAttemptsLeft", func(t *testing.T) {
		db := storagetest.Open(t)
		clk := newClock(db, t0)
		e := enqueue(t, db, storage.NewJob{MaxAttempts: 1})
		lease(t, db, "w1")
		clk.Add(time.Hour)
		if j := lease(t, db, "w2"); j != nil {
			t.Fatalf("leased %+v past its attempts", j)
		}
		if got := job(t, db, e.ID); got.State != storage.JobFailed || !strings.Contains(got.LastError, "lease of w1 ran out") {
			t.Errorf("job = %+v, want failed", got)
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		db := storagetest.Open(t)
		_, err := db.LeaseJob(ctx, "", kinds, time.Minute)
		wantErr(t, err, storage.Invalid, "owner")
		_, err = db.LeaseJob(ctx, "w", nil, time.Minute)
		wantErr(t, err, storage.Invalid, "kinds")
		_, err = db.LeaseJob(ctx, "w", kinds, 0)
		wantErr(t, err, storage.Invalid, "lease")
	})
}

func TestDB_CompleteJob(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		db := storagetest.Open(t)
		newClock(db, t0)
		enqueue(t, db, storage.NewJob{})
		j := lease(t, db, "w1")
		var stored *storage.Record
		err := db.CompleteJob(ctx, j, func(ctx context.Context, tx *storage.JobTx) error {
			var err error
			if !tx.Now().Equal(t0) {
				t.Errorf("tx.Now = %v", tx.Now())
			}
			stored, err = tx.Store(ctx, rec(t, "global", "From a job", "Stored with the completion."))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		get(t, db, stored.ID)
		if got := job(t, db, j.ID); got.State != storage.JobDone || got.LeaseOwner != "" || !got.FinishedAt.Equal(t0) {
			t.Errorf("job = %+v", got)
		}
		if j.State != storage.JobDone {
			t.Errorf("caller's job not updated: %+v", j)
		}
		wantErr(t, db.CompleteJob(ctx, j, nil), storage.Conflict, "job")
	})

	t.Run("EffectsFail", func(t *testing.T) {
		db := storagetest.Open(t)
		enqueue(t, db, storage.NewJob{})
		j := lease(t, db, "w1")
		boom := errors.New("boom")
		before := snapshot(t, db)
		err := db.CompleteJob(ctx, j, func(ctx context.Context, tx *storage.JobTx) error {
			if _, err := tx.Store(ctx, rec(t, "global", "Half done", "Must not survive.")); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want boom", err)
		}
		if snapshot(t, db) != before {
			t.Error("failed effects were written")
		}
		if got := job(t, db, j.ID); got.State != storage.JobLeased {
			t.Errorf("job = %+v, want still leased", got)
		}
	})
}

func TestDB_FailJob(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	clk := newClock(db, t0)
	e := enqueue(t, db, storage.NewJob{MaxAttempts: 2})

	j := lease(t, db, "w1")
	if err := db.FailJob(ctx, j, text(t, "model down"), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	got := job(t, db, e.ID)
	if got.State != storage.JobQueued || !got.RunAfter.Equal(t0.Add(30*time.Second)) || got.LastError != "attempt 1: model down" || got.LeaseOwner != "" {
		t.Fatalf("after a failure: %+v", got)
	}
	if j := lease(t, db, "w1"); j != nil {
		t.Fatalf("leased during backoff: %+v", j)
	}
	clk.Add(30 * time.Second)
	j = lease(t, db, "w1")
	if j == nil || j.Attempts != 2 {
		t.Fatalf("retry lease = %+v", j)
	}
	// The last attempt fails for good and stays visible with its error.
	if err := db.FailJob(ctx, j, text(t, "disk full"), time.Second); err != nil {
		t.Fatal(err)
	}
	got = job(t, db, e.ID)
	if got.State != storage.JobFailed || !strings.HasPrefix(got.LastError, "attempt 2: disk full") ||
		!strings.Contains(got.LastError, "before: attempt 1: model down") || !got.FinishedAt.Equal(clk.Now()) {
		t.Fatalf("after the last failure: %+v", got)
	}
	clk.Add(time.Hour)
	if j := lease(t, db, "w1"); j != nil {
		t.Fatalf("leased a failed job: %+v", j)
	}
	if failed, _ := db.Jobs(ctx, "test", storage.JobFailed); len(failed) != 1 {
		t.Errorf("Jobs(failed) = %d, want 1", len(failed))
	}
}

func TestDB_ReleaseLeases(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	newClock(db, t0)
	a := enqueue(t, db, storage.NewJob{})
	b := enqueue(t, db, storage.NewJob{MaxAttempts: 1})
	enqueue(t, db, storage.NewJob{})
	lease(t, db, "old-process")
	lease(t, db, "old-process")
	mine := lease(t, db, "new-process")

	n, err := db.ReleaseLeases(ctx, "new-process")
	if err != nil || n != 2 {
		t.Fatalf("ReleaseLeases = %d, %v; want 2", n, err)
	}
	if got := job(t, db, a.ID); got.State != storage.JobQueued || got.Attempts != 1 || !strings.Contains(got.LastError, "released at start") {
		t.Errorf("a = %+v, want queued again", got)
	}
	if got := job(t, db, b.ID); got.State != storage.JobFailed {
		t.Errorf("b = %+v, want failed (no attempts left)", got)
	}
	if got := job(t, db, mine.ID); got.State != storage.JobLeased || got.LeaseOwner != "new-process" {
		t.Errorf("own lease = %+v, want kept", got)
	}
	// Taken again at once, with the attempt counted.
	if j := lease(t, db, "new-process"); j == nil || j.ID != a.ID || j.Attempts != 2 {
		t.Errorf("re-lease = %+v", j)
	}
}

func TestDB_CancelJobs(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	clk := newClock(db, t0)
	due := enqueue(t, db, storage.NewJob{Key: "due"})
	keep := enqueue(t, db, storage.NewJob{Key: "keep", RunAfter: t0.Add(time.Hour)})
	enqueue(t, db, storage.NewJob{Key: "old-slot", RunAfter: t0.Add(2 * time.Hour)})
	tried := enqueue(t, db, storage.NewJob{Key: "tried"})
	lease(t, db, "w") // takes "due" (oldest run_after, then id)
	lease(t, db, "w") // takes "tried"
	enqueue(t, db, storage.NewJob{Kind: "other", RunAfter: t0.Add(time.Hour)})

	if n, err := db.CancelJobs(ctx, "test", "keep", true); err != nil || n != 1 {
		t.Fatalf("CancelJobs(future) = %d, %v; want 1 (old-slot)", n, err)
	}
	for _, id := range []string{due.ID, keep.ID, tried.ID} {
		job(t, db, id)
	}
	clk.Add(-time.Hour)
	back := enqueue(t, db, storage.NewJob{Key: "queued-due"})
	clk.Add(time.Hour)
	if n, err := db.CancelJobs(ctx, "test", "", false); err != nil || n != 2 {
		t.Fatalf("CancelJobs(all) = %d, %v; want 2 (keep, queued-due)", n, err)
	}
	if _, err := db.Job(ctx, back.ID); storage.ErrorCode(err) != storage.NotFound {
		t.Errorf("queued job survived: %v", err)
	}
	if n := countRows(t, db, `SELECT COUNT(*) FROM jobs`); n != 3 {
		t.Errorf("%d jobs left, want 3 (two leased, one other kind)", n)
	}
}

// BenchmarkDB_JobCycle measures one job through the queue: enqueue, lease
// and complete, three write transactions.
func BenchmarkDB_JobCycle(b *testing.B) {
	db := storagetest.Open(b)
	for b.Loop() {
		enqueue(b, db, storage.NewJob{})
		j := lease(b, db, "w")
		if err := db.CompleteJob(ctx, j, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDB_LeaseJobIdle measures an idle poll: nothing due, no write.
func BenchmarkDB_LeaseJobIdle(b *testing.B) {
	db := storagetest.Open(b)
	enqueue(b, db, storage.NewJob{RunAfter: time.Now().Add(time.Hour)})
	for b.Loop() {
		if j := lease(b, db, "w"); j != nil {
			b.Fatal("leased a job that is not due")
		}
	}
}
