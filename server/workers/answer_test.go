package workers_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/answers"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/server/scope"
	"github.com/hearth-memory/hearth/server/workers"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// ask records one search in each session and writes it.
func askIn(t *testing.T, db *storage.DB, query string, sessions ...string) {
	t.Helper()
	for _, s := range sessions {
		db.RecordAsk(storage.Ask{Namespace: "global", Client: "codex", Session: s, Query: storagetest.Text(t, query)})
	}
	if err := db.FlushAsks(ctx); err != nil {
		t.Fatal(err)
	}
}

func question(t *testing.T, db *storage.DB, text string) *storage.Question {
	t.Helper()
	q, err := db.FindQuestion(ctx, []string{"global"}, text)
	if err != nil {
		t.Fatalf("question %q: %v", text, err)
	}
	return q
}

// idle drives one poll as the runner does — the due jobs first (such as
// the nightly maintenance), then the idle work — and reports whether the
// idle work ran a job.
func idle(t *testing.T, w *workers.Workers) bool {
	t.Helper()
	for {
		ran, err := w.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !ran {
			break
		}
	}
	ran, err := w.Idle(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ran
}

// TestWorkers_HandleAnswers holds R-W3: answers are made by the job queue,
// one per idle poll, the highest demand first; an edited source makes its
// answer stale and the next idle poll makes it again; age makes answers due
// again on the injected clock, still one per poll.
func TestWorkers_HandleAnswers(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	db, clk := setup(t, start)
	migr := storagetest.Store(t, db, storage.NewRecord{Title: storagetest.Text(t, "Migrations"),
		Content: storagetest.Text(t, "Run make migrate before deploying.")})
	storagetest.Store(t, db, storage.NewRecord{Title: storagetest.Text(t, "Python in CI"),
		Content: storagetest.Text(t, "CI uses Python 3.12 for every job.")})
	askIn(t, db, "how do we run migrations", "s1", "s2", "s3")
	askIn(t, db, "which python version does CI use", "s1", "s2")
	askIn(t, db, "where are the build logs", "s1", "s2")
	askIn(t, db, "who wrote the deploy script", "s1") // one session: not answered

	w := newWorkers(t, db, nil)
	w.HandleAnswers(&answers.Composer{DB: db, Scopes: scope.New(options.Default())}, answers.DefaultRefresh)
	prepare(t, w)

	// A regular poll runs due jobs only: no answer job was queued by it.
	if ran, err := w.RunOnce(ctx); err != nil || ran {
		t.Fatalf("RunOnce: %v, %v; want no job", ran, err)
	}
	order := []string{"how do we run migrations", "which python version does CI use", "where are the build logs"}
	for i, text := range order {
		if !idle(t, w) {
			t.Fatalf("idle poll %d ran nothing", i+1)
		}
		for j, other := range order {
			q := question(t, db, other)
			if answered := q.Answer != nil; answered != (j <= i) {
				t.Fatalf("after idle poll %d: %q answered = %v", i+1, other, answered)
			}
		}
		if q := question(t, db, text); q.Answer.JobID == "" || !q.Answer.GeneratedAt.Equal(clk.Now()) {
			t.Errorf("%q: answer %+v, want made by a job at the clock's time", text, q.Answer)
		}
	}
	if idle(t, w) {
		t.Fatal("a fourth idle poll ran a job: nothing else is due")
	}
	if q := question(t, db, "who wrote the deploy script"); q.Answer != nil {
		t.Error("a question of one session was answered")
	}
	if q := question(t, db, "where are the build logs"); q.Answer.Kind != storage.AnswerNone || q.Answer.Text != storage.NoAnswer {
		t.Errorf("build logs: %+v, want %q", q.Answer, storage.NoAnswer)
	}
	q := question(t, db, "how do we run migrations")
	if q.Answer.Kind != storage.AnswerExtractive || q.Answer.Text != "Run make migrate before deploying." ||
		len(q.Answer.SourceIDs) != 1 || q.Answer.SourceIDs[0] != migr.ID {
		t.Errorf("migrations: %+v", q.Answer)
	}

	// An edit of a source: stale at once, fresh again after one idle poll.
	clk.Add(time.Minute)
	if _, err := db.Update(ctx, migr.ID, migr.Revision, storage.Changes{Content: ptrText(t, "Run make migrate-all before deploying.")}, "codex"); err != nil {
		t.Fatal(err)
	}
	if q := question(t, db, "how do we run migrations"); !q.Answer.Stale {
		t.Fatal("not stale after an edit of its source")
	}
	if !idle(t, w) {
		t.Fatal("the stale answer was not refreshed")
	}
	q = question(t, db, "how do we run migrations")
	if q.Answer.Stale || q.Answer.Text != "Run make migrate-all before deploying." {
		t.Errorf("after the refresh: %+v, want fresh with the new text", q.Answer)
	}
	if idle(t, w) {
		t.Error("another job ran: only the stale answer was due")
	}

	// A day later every answer is due again: still one per idle poll, the
	// highest demand first.
	clk.Add(25 * time.Hour)
	if !idle(t, w) {
		t.Fatal("nothing refreshed a day later")
	}
	if q := question(t, db, "how do we run migrations"); !q.Answer.GeneratedAt.Equal(clk.Now()) {
		t.Errorf("migrations answer from %v, want refreshed at %v", q.Answer.GeneratedAt, clk.Now())
	}
	if q := question(t, db, "which python version does CI use"); q.Answer.GeneratedAt.Equal(clk.Now()) {
		t.Error("a second answer refreshed on the same idle poll")
	}
}

func ptrText(t *testing.T, s string) *screen.Text {
	v := storagetest.Text(t, s)
	return &v
}

// TestWorkers_Idle holds the idle hook's contract: asked in order until one
// queues, that job run at once, errors returned.
func TestWorkers_Idle(t *testing.T) {
	t.Parallel()
	db, _ := setup(t, time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	w := newWorkers(t, db, nil)
	var ran []string
	w.Handle("idle-test", func(ctx context.Context, job *storage.Job) (workers.Effects, error) {
		ran = append(ran, job.ID)
		return nil, nil
	})
	calls := 0
	w.OnIdle(func(ctx context.Context) (bool, error) { calls++; return false, nil })
	w.OnIdle(func(ctx context.Context) (bool, error) {
		_, _, err := db.EnqueueJob(ctx, storage.NewJob{Kind: "idle-test"})
		return err == nil, err
	})
	boom := errors.New("boom")
	w.OnIdle(func(ctx context.Context) (bool, error) { return false, boom })
	prepare(t, w)

	t.Run("OK", func(t *testing.T) {
		if !idle(t, w) || len(ran) != 1 || calls != 1 {
			t.Errorf("ran %v, first hook called %d times; want one job, one call", ran, calls)
		}
	})
	t.Run("ErrHook", func(t *testing.T) {
		w2 := newWorkers(t, db, nil)
		w2.OnIdle(func(ctx context.Context) (bool, error) { return false, boom })
		if _, err := w2.Idle(ctx); !errors.Is(err, boom) {
			t.Errorf("got %v, want the hook's error", err)
		}
	})
}
