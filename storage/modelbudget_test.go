package storage_test

import (
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// TestDB_DeferJob holds that a deferred job waits, queued, with its attempt
// given back: a job deferred more times than its attempt limit still runs.
func TestDB_DeferJob(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	clk := newClock(db, t0)
	e := enqueue(t, db, storage.NewJob{MaxAttempts: 1})
	for i := range 3 {
		j := lease(t, db, "w1")
		if j == nil || j.Attempts != 1 {
			t.Fatalf("lease %d: %+v", i, j)
		}
		if err := db.DeferJob(ctx, j, text(t, "the model budget is spent"), clk.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		got := job(t, db, e.ID)
		if got.State != storage.JobQueued || got.Attempts != 0 || got.LastError != "the model budget is spent" || got.LeaseOwner != "" {
			t.Fatalf("deferred %d: %+v", i, got)
		}
		if j := lease(t, db, "w1"); j != nil {
			t.Fatalf("leased before run_after: %+v", j)
		}
		clk.Add(time.Minute)
	}
	j := lease(t, db, "w1")
	if err := db.CompleteJob(ctx, j, nil); err != nil {
		t.Fatal(err)
	}
	// A lost lease is refused.
	enqueue(t, db, storage.NewJob{})
	j = lease(t, db, "w1")
	stale := *j
	stale.Attempts = 7
	if err := db.DeferJob(ctx, &stale, text(t, "x"), clk.Now()); storage.ErrorCode(err) != storage.Conflict {
		t.Fatalf("lost lease: got %v, want Conflict", err)
	}
}

// TestDB_ModelBudget holds the model usage of a day, summed per server, the
// pause, and the resume that forgets the day's usage; both audited.
func TestDB_ModelBudget(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	newClock(db, t0)
	day := t0.Format(time.DateOnly)
	for range 2 {
		if err := db.AddModelUsage(ctx, day, "http://a:11434", storage.ModelUsage{Calls: 1, PromptTokens: 30, CompletionTokens: 10, Estimated: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.AddModelUsage(ctx, "2000-01-01", "http://a:11434", storage.ModelUsage{Calls: 1}); err != nil {
		t.Fatal(err)
	}
	got, paused, err := db.ModelBudget(ctx, day)
	if err != nil || paused || got["http://a:11434"] != (storage.ModelUsage{Calls: 2, PromptTokens: 60, CompletionTokens: 20, Estimated: 2}) || len(got) != 1 {
		t.Fatalf("ModelBudget: %+v %v %v", got, paused, err)
	}
	if old, _, _ := db.ModelBudget(ctx, "2000-01-01"); len(old) != 0 {
		t.Errorf("a day older than a week is kept: %+v", old)
	}
	if err := db.PauseModels(ctx, true, day, "admin", text(t, "paused")); err != nil {
		t.Fatal(err)
	}
	if got, paused, _ = db.ModelBudget(ctx, day); !paused || len(got) != 1 {
		t.Fatalf("paused: %v %+v", paused, got)
	}
	if err := db.PauseModels(ctx, false, day, "admin", text(t, "resumed")); err != nil {
		t.Fatal(err)
	}
	if got, paused, _ = db.ModelBudget(ctx, day); paused || len(got) != 0 {
		t.Fatalf("resumed: %v %+v", paused, got)
	}
	rows, err := db.AuditLog(ctx, 2)
	if err != nil || len(rows) != 2 || rows[0].Action != storage.ActionModelResume || rows[1].Action != storage.ActionModelPause || rows[0].Client != "admin" {
		t.Fatalf("audit: %+v %v", rows, err)
	}
}
