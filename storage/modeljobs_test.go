package storage_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

func TestTx_ModelJobEffects(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		db := storagetest.Open(t)
		c := newClock(db, t0)
		target := storagetest.Store(t, db, rec(t, "global", "A candidate", "To be forgotten by a job."))
		c.Add(time.Minute)
		enqueue(t, db, storage.NewJob{})
		j := lease(t, db, "w1")
		var seen *storage.Record
		err := db.CompleteJob(ctx, j, func(ctx context.Context, tx *storage.JobTx) error {
			var err error
			if seen, err = tx.Record(ctx, target.ID); err != nil {
				return err
			}
			if _, err := tx.Forget(ctx, target.ID, seen.Revision, text(t, "review: duplicate"), storage.SystemClient); err != nil {
				return err
			}
			if err := tx.Audit(ctx, storage.AuditEntry{Client: storage.SystemClient, Action: storage.ActionReview, Detail: text(t, "1 candidate")}); err != nil {
				return err
			}
			return tx.Refuse(ctx, storage.RefusalEntry{Client: storage.SystemClient, Action: storage.ActionRefuseScreen, Field: "memories[0].content", Pattern: "github-token"})
		})
		if err != nil {
			t.Fatal(err)
		}
		if seen.Title != "A candidate" || seen.Revision != 1 {
			t.Errorf("Tx.Record: got %+v", seen)
		}
		if got := get(t, db, target.ID); got.Status != storage.StatusDeleted || got.Revision != 2 {
			t.Errorf("forgotten record: got status %s revision %d, want deleted at 2", got.Status, got.Revision)
		}
		log, err := db.AuditLog(ctx, 3)
		if err != nil {
			t.Fatal(err)
		}
		want := []storage.Action{storage.ActionRefuseScreen, storage.ActionReview, storage.ActionForget}
		for i, e := range log {
			if e.Action != want[i] {
				t.Errorf("audit[%d]: got %s, want %s", i, e.Action, want[i])
			}
		}
		if d := log[0].Detail.String(); d != "field memories[0].content pattern github-token" {
			t.Errorf("refusal detail: got %q", d)
		}
	})
	t.Run("ErrRolledBack", func(t *testing.T) {
		db := storagetest.Open(t)
		target := storagetest.Store(t, db, rec(t, "global", "A candidate", "Must survive."))
		enqueue(t, db, storage.NewJob{})
		j := lease(t, db, "w1")
		before := snapshot(t, db)
		boom := errors.New("boom")
		err := db.CompleteJob(ctx, j, func(ctx context.Context, tx *storage.JobTx) error {
			if _, err := tx.Forget(ctx, target.ID, 0, text(t, "gone"), storage.SystemClient); err != nil {
				return err
			}
			if err := tx.Audit(ctx, storage.AuditEntry{Client: storage.SystemClient, Action: storage.ActionReview}); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("CompleteJob: got %v, want boom", err)
		}
		if snapshot(t, db) != before {
			t.Error("failed effects left a trace")
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		db := storagetest.Open(t)
		target := storagetest.Store(t, db, rec(t, "global", "A record", "Stays."))
		enqueue(t, db, storage.NewJob{})
		j := lease(t, db, "w1")
		err := db.CompleteJob(ctx, j, func(ctx context.Context, tx *storage.JobTx) error {
			if _, err := tx.Record(ctx, "01NOSUCHRECORD0000000000000"); storage.ErrorCode(err) != storage.NotFound {
				t.Errorf("Tx.Record unknown: got %v, want NotFound", err)
			}
			if _, err := tx.Forget(ctx, target.ID, 7, text(t, "stale"), storage.SystemClient); storage.ErrorCode(err) != storage.Conflict {
				t.Errorf("Tx.Forget stale: got %v, want Conflict", err)
			}
			if err := tx.Audit(ctx, storage.AuditEntry{}); storage.ErrorCode(err) != storage.Invalid {
				t.Errorf("Tx.Audit without action: got %v, want Invalid", err)
			}
			if err := tx.Refuse(ctx, storage.RefusalEntry{Action: storage.ActionReview}); storage.ErrorCode(err) != storage.Invalid {
				t.Errorf("Tx.Refuse with no refusal: got %v, want Invalid", err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := get(t, db, target.ID); got.Status != storage.StatusActive {
			t.Errorf("record: got %s, want active", got.Status)
		}
	})
}

func TestDB_Candidates(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	c := newClock(db, t0)
	cand := func(title string) *storage.Record {
		nr := rec(t, "global", title, "Content of "+title+".")
		nr.Status, nr.Source = storage.StatusCandidate, storage.SourceExtraction
		return storagetest.Store(t, db, nr)
	}
	first := cand("First")
	c.Add(time.Minute)
	storagetest.Store(t, db, rec(t, "global", "Active", "Not a candidate."))
	second := cand("Second")
	c.Add(time.Minute)
	gone := cand("Forgotten")
	if _, err := db.Forget(ctx, gone.ID, 0, text(t, "test"), "test"); err != nil {
		t.Fatal(err)
	}
	t.Run("OK", func(t *testing.T) {
		got, err := db.Candidates(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].ID != first.ID || got[1].ID != second.ID {
			t.Errorf("Candidates: got %d records, want the two live candidates oldest first", len(got))
		}
	})
	t.Run("OKLimit", func(t *testing.T) {
		got, err := db.Candidates(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].ID != first.ID {
			t.Errorf("Candidates(1): got %d records", len(got))
		}
	})
}

func TestDB_JobCounts(t *testing.T) {
	t.Parallel()
	db := storagetest.Open(t)
	newClock(db, t0)
	enqueue(t, db, storage.NewJob{})
	enqueue(t, db, storage.NewJob{})
	enqueue(t, db, storage.NewJob{Kind: "other"})
	j := lease(t, db, "w1")
	if err := db.CompleteJob(ctx, j, nil); err != nil {
		t.Fatal(err)
	}
	got, err := db.JobCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []storage.JobCount{{Kind: "other", State: storage.JobQueued, N: 1}, {Kind: "test", State: storage.JobDone, N: 1}, {Kind: "test", State: storage.JobQueued, N: 1}}
	if len(got) != len(want) {
		t.Fatalf("JobCounts: got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("JobCounts[%d]: got %+v, want %+v", i, got[i], want[i])
		}
	}
}
