package workers_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	_ "time/tzdata" // the DST cases must not depend on the host's zoneinfo

	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/server/workers"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
	"github.com/hearth-memory/hearth/storage/testwait"
)

var ctx = context.Background()

// jobDone says whether the job with id is done, for testwait.WaitFor.
func jobDone(db *storage.DB, id string) func() bool {
	return func() bool {
		got, err := db.Job(ctx, id)
		return err == nil && got.State == storage.JobDone
	}
}

// clock is a settable clock, safe for concurrent reads.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func (c *clock) Add(d time.Duration) { c.Set(c.Now().Add(d)) }

// setup opens a store whose clock reads c, set to start.
func setup(t *testing.T, start time.Time) (*storage.DB, *clock) {
	t.Helper()
	db := storagetest.Open(t)
	c := &clock{t: start}
	db.Now = c.Now
	return db, c
}

// newWorkers returns prepared Workers over db with the default options, in UTC.
func newWorkers(t *testing.T, db *storage.DB, edit func(*workers.Config)) *workers.Workers {
	t.Helper()
	cfg := workers.Config{
		DB: db, Options: options.Default(), Location: time.UTC,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if edit != nil {
		edit(&cfg)
	}
	w, err := workers.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func prepare(t *testing.T, w *workers.Workers) {
	t.Helper()
	if err := w.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
}

// runOnce runs one job, failing the test on a queue error, and reports
// whether there was one.
func runOnce(t *testing.T, w *workers.Workers) bool {
	t.Helper()
	ran, err := w.RunOnce(ctx)
	if err != nil {
		t.Fatalf("RunOnce: %v", err)
	}
	return ran
}

func jobs(t *testing.T, db *storage.DB, kind, state string) []*storage.Job {
	t.Helper()
	js, err := db.Jobs(ctx, kind, state)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func auditActions(t *testing.T, db *storage.DB, action storage.Action) []storage.AuditEntry {
	t.Helper()
	log, err := db.AuditLog(ctx, 500)
	if err != nil {
		t.Fatal(err)
	}
	var out []storage.AuditEntry
	for _, e := range log {
		if e.Action == action {
			out = append(out, e)
		}
	}
	return out
}

func TestScheduler_Next(t *testing.T) {
	t.Parallel()
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	plus2 := time.FixedZone("UTC+2", 2*60*60)
	at := func(h, m int) options.ReviewAt { return options.ReviewAt{Hour: h, Minute: m} }
	tests := []struct {
		name string
		at   options.ReviewAt
		loc  *time.Location
		now  time.Time
		want time.Time
	}{
		{"LaterToday", at(3, 0), time.UTC, time.Date(2026, 11, 2, 1, 0, 0, 0, time.UTC), time.Date(2026, 11, 2, 3, 0, 0, 0, time.UTC)},
		{"AtTheSlotIsTomorrow", at(3, 0), time.UTC, time.Date(2026, 11, 2, 3, 0, 0, 0, time.UTC), time.Date(2026, 11, 3, 3, 0, 0, 0, time.UTC)},
		{"Tomorrow", at(3, 0), time.UTC, time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC), time.Date(2026, 11, 3, 3, 0, 0, 0, time.UTC)},
		{"MonthEnd", at(23, 59), time.UTC, time.Date(2026, 12, 31, 23, 59, 30, 0, time.UTC), time.Date(2027, 1, 1, 23, 59, 0, 0, time.UTC)},
		// 01:30 UTC is 03:30 in UTC+2: today's 03:00 local has passed.
		{"LocalTime", at(3, 0), plus2, time.Date(2026, 11, 2, 1, 30, 0, 0, time.UTC), time.Date(2026, 11, 3, 1, 0, 0, 0, time.UTC)},
		// 23:30 UTC on the 1st is already 01:30 on the 2nd in UTC+2.
		{"LocalDateAhead", at(3, 0), plus2, time.Date(2026, 11, 1, 23, 30, 0, 0, time.UTC), time.Date(2026, 11, 2, 1, 0, 0, 0, time.UTC)},
		// 2026-03-08 02:30 does not exist in New York: the run comes when
		// the clocks jump, 03:00 EDT (07:00 UTC).
		{"SpringForward", at(2, 30), ny, time.Date(2026, 3, 8, 5, 0, 0, 0, time.UTC), time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC)},
		{"AfterSpringForward", at(2, 30), ny, time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC), time.Date(2026, 3, 9, 6, 30, 0, 0, time.UTC)},
		// 01:30 happens twice on 2026-11-01 in New York; the run comes once.
		{"Repeated", at(1, 30), ny, time.Date(2026, 11, 1, 4, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC)},
		// 2026-11-01 03:00 EST is 08:00 UTC, a 25-hour day after 10-31 03:00 EDT (07:00 UTC).
		{"FallBack", at(3, 0), ny, time.Date(2026, 10, 31, 7, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := workers.Scheduler{At: tt.at, Location: tt.loc}.Next(tt.now)
			if !ok || !got.Equal(tt.want) {
				t.Errorf("Next(%v) = %v, %v; want %v", tt.now, got.UTC(), ok, tt.want)
			}
		})
	}
	if _, ok := (workers.Scheduler{At: options.ReviewAt{Off: true}}).Next(time.Now()); ok {
		t.Error("Next with review_at off gave a time")
	}
}

func TestWorkers_Maintenance(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	db, clk := setup(t, start)
	w := newWorkers(t, db, nil)
	prepare(t, w)

	queued := jobs(t, db, storage.KindMaintenance, storage.JobQueued)
	first := time.Date(2026, 11, 3, 3, 0, 0, 0, time.UTC)
	if len(queued) != 1 || !queued[0].RunAfter.Equal(first) || queued[0].Key != workers.SlotKey(first) {
		t.Fatalf("queued = %+v, want one run at %v", queued, first)
	}
	if runOnce(t, w) {
		t.Fatal("ran a job before review_at")
	}
	cand := storagetest.Store(t, db, storage.NewRecord{Status: storage.StatusCandidate})
	for range 12 {
		storagetest.Store(t, db, storage.NewRecord{})
	}
	// The run merges SQLite's full-text index; PostgreSQL's GIN index has
	// no segments to merge (docs/postgres.md, The engine).
	segmented := db.Backend() == "sqlite"
	if n, err := db.IndexSegments(ctx); segmented && (err != nil || n < 2) {
		t.Fatalf("%d index segments before the run (%v): the test needs several", n, err)
	}

	// Fifteen days on: the run of the 3rd is due (the ones between were
	// never queued), the candidate is older than 14 days.
	clk.Set(time.Date(2026, 11, 17, 3, 0, 0, 0, time.UTC))
	if !runOnce(t, w) {
		t.Fatal("the due maintenance run did not run")
	}
	if runOnce(t, w) {
		t.Fatal("a second job ran")
	}
	recs, _ := db.Get(ctx, []string{cand.ID})
	if recs[0].Status != storage.StatusDeleted {
		t.Errorf("candidate = %s, want deleted by expiry", recs[0].Status)
	}
	runs := auditActions(t, db, storage.ActionMaintenance)
	if len(runs) != 1 || runs[0].Client != storage.SystemClient ||
		runs[0].Detail.String() != "candidates expired 1, records purged 0, receipts tombstoned 0, jobs purged 0" {
		t.Errorf("maintenance audit = %+v", runs)
	}
	if n, err := db.IndexSegments(ctx); segmented && (err != nil || n != 1) {
		t.Errorf("%d index segments after the run (%v), want 1: merged", n, err)
	}
	if done := jobs(t, db, storage.KindMaintenance, storage.JobDone); len(done) != 1 || done[0].Attempts != 1 {
		t.Errorf("done = %+v", done)
	}
	next := time.Date(2026, 11, 18, 3, 0, 0, 0, time.UTC)
	if q := jobs(t, db, storage.KindMaintenance, storage.JobQueued); len(q) != 1 || !q[0].RunAfter.Equal(next) {
		t.Errorf("next run = %+v, want %v", q, next)
	}
}

func TestWorkers_MissedRunAtStart(t *testing.T) {
	t.Parallel()
	db, clk := setup(t, time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC))
	prepare(t, newWorkers(t, db, nil)) // queues the 3rd, 03:00

	// The box was off from the 2nd to the 5th: three review times missed.
	clk.Set(time.Date(2026, 11, 5, 10, 0, 0, 0, time.UTC))
	w := newWorkers(t, db, nil)
	prepare(t, w)
	if !runOnce(t, w) {
		t.Fatal("the missed run did not run at start")
	}
	if runOnce(t, w) {
		t.Fatal("more than one missed run ran")
	}
	if n := len(auditActions(t, db, storage.ActionMaintenance)); n != 1 {
		t.Errorf("%d maintenance runs, want 1", n)
	}
	next := time.Date(2026, 11, 6, 3, 0, 0, 0, time.UTC)
	if q := jobs(t, db, storage.KindMaintenance, storage.JobQueued); len(q) != 1 || !q[0].RunAfter.Equal(next) {
		t.Errorf("queued = %+v, want one at %v", q, next)
	}
}

func TestWorkers_ReviewAtChanged(t *testing.T) {
	t.Parallel()
	db, _ := setup(t, time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC))
	prepare(t, newWorkers(t, db, nil))
	prepare(t, newWorkers(t, db, func(c *workers.Config) { c.Options.ReviewAt = options.ReviewAt{Hour: 4, Minute: 30} }))
	want := time.Date(2026, 11, 3, 4, 30, 0, 0, time.UTC)
	if q := jobs(t, db, storage.KindMaintenance, storage.JobQueued); len(q) != 1 || !q[0].RunAfter.Equal(want) {
		t.Errorf("queued = %+v, want one at %v", q, want)
	}
	// A zone change moves the slot too.
	prepare(t, newWorkers(t, db, func(c *workers.Config) {
		c.Options.ReviewAt = options.ReviewAt{Hour: 4, Minute: 30}
		c.Location = time.FixedZone("UTC-1", -60*60)
	}))
	want = time.Date(2026, 11, 3, 5, 30, 0, 0, time.UTC)
	if q := jobs(t, db, storage.KindMaintenance, storage.JobQueued); len(q) != 1 || !q[0].RunAfter.Equal(want) {
		t.Errorf("queued = %+v, want one at %v", q, want)
	}

	t.Run("Off", func(t *testing.T) {
		prepare(t, newWorkers(t, db, func(c *workers.Config) { c.Options.ReviewAt = options.ReviewAt{Off: true} }))
		if q := jobs(t, db, storage.KindMaintenance, ""); len(q) != 0 {
			t.Errorf("review_at off left %+v", q)
		}
	})
}

func TestWorkers_Retry(t *testing.T) {
	t.Parallel()
	db, clk := setup(t, time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC))
	w := newWorkers(t, db, nil)
	var calls atomic.Int32
	w.Handle("flaky", func(ctx context.Context, job *storage.Job) (workers.Effects, error) {
		if calls.Add(1) <= 2 {
			return nil, errors.New("model server unavailable")
		}
		return func(ctx context.Context, tx *storage.JobTx) error {
			_, err := tx.Store(ctx, storage.NewRecord{
				Namespace: "global", Type: storage.TypeNote, Title: storagetest.Text(t, "from flaky"), Content: storagetest.Text(t, "x"),
				Confidence: 0.5, Writer: "test", Source: storage.SourceExtraction, Status: storage.StatusCandidate,
			})
			return err
		}, nil
	})
	prepare(t, w)
	j, _, err := db.EnqueueJob(ctx, storage.NewJob{Kind: "flaky"})
	if err != nil {
		t.Fatal(err)
	}

	if !runOnce(t, w) {
		t.Fatal("no run")
	}
	got, _ := db.Job(ctx, j.ID)
	if got.State != storage.JobQueued || got.LastError != "attempt 1: model server unavailable" ||
		!got.RunAfter.Equal(clk.Now().Add(workers.Backoff(1))) {
		t.Fatalf("after attempt 1: %+v", got)
	}
	if runOnce(t, w) {
		t.Fatal("ran during backoff")
	}
	clk.Add(workers.Backoff(1))
	runOnce(t, w)
	got, _ = db.Job(ctx, j.ID)
	if got.State != storage.JobQueued || !got.RunAfter.Equal(clk.Now().Add(workers.Backoff(2))) || workers.Backoff(2) != 2*workers.Backoff(1) {
		t.Fatalf("after attempt 2: %+v", got)
	}
	clk.Add(workers.Backoff(2))
	runOnce(t, w)
	got, _ = db.Job(ctx, j.ID)
	if got.State != storage.JobDone || got.Attempts != 3 {
		t.Fatalf("after attempt 3: %+v", got)
	}
	if st, _ := db.Status(ctx); len(st.Counts) != 1 || st.Counts[0].N != 1 {
		t.Errorf("effects applied %+v, want one record", st.Counts)
	}
}

func TestWorkers_FailsForGood(t *testing.T) {
	t.Parallel()
	db, clk := setup(t, time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC))
	w := newWorkers(t, db, nil)
	w.Handle("broken", func(ctx context.Context, job *storage.Job) (workers.Effects, error) {
		return nil, errors.New("cannot parse the reply")
	})
	w.Handle("panics", func(ctx context.Context, job *storage.Job) (workers.Effects, error) {
		return func(ctx context.Context, tx *storage.JobTx) error { panic("bug") }, nil
	})
	prepare(t, w)
	broken, _, _ := db.EnqueueJob(ctx, storage.NewJob{Kind: "broken", MaxAttempts: 2})
	panics, _, _ := db.EnqueueJob(ctx, storage.NewJob{Kind: "panics", MaxAttempts: 1})
	for range 10 {
		runOnce(t, w)
		clk.Add(time.Hour)
	}
	got, _ := db.Job(ctx, broken.ID)
	if got.State != storage.JobFailed || got.Attempts != 2 || !strings.HasPrefix(got.LastError, "attempt 2: cannot parse the reply") {
		t.Errorf("broken = %+v", got)
	}
	got, _ = db.Job(ctx, panics.ID)
	if got.State != storage.JobFailed || got.LastError != "attempt 1: panic: bug" {
		t.Errorf("panics = %+v", got)
	}
}

func TestWorkers_ReleasesDeadLeases(t *testing.T) {
	t.Parallel()
	db, _ := setup(t, time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC))
	var effects atomic.Int32
	handler := func(ctx context.Context, job *storage.Job) (workers.Effects, error) {
		return func(ctx context.Context, tx *storage.JobTx) error { effects.Add(1); return nil }, nil
	}
	j, _, _ := db.EnqueueJob(ctx, storage.NewJob{Kind: "work"})
	// A process leased it and died: its lease has ten minutes to run.
	if l, err := db.LeaseJob(ctx, "dead-process", []string{"work"}, 10*time.Minute); err != nil || l == nil {
		t.Fatal(l, err)
	}
	w := newWorkers(t, db, nil)
	w.Handle("work", handler)
	prepare(t, w)
	if !runOnce(t, w) {
		t.Fatal("the released job did not run")
	}
	if runOnce(t, w) {
		t.Fatal("ran twice")
	}
	got, _ := db.Job(ctx, j.ID)
	if got.State != storage.JobDone || got.Attempts != 2 || effects.Load() != 1 {
		t.Errorf("job = %+v, effects %d; want done once on attempt 2", got, effects.Load())
	}
}

func TestWorkers_StartStop(t *testing.T) {
	t.Parallel()
	db, _ := setup(t, time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC))
	w := newWorkers(t, db, func(c *workers.Config) { c.Poll = 10 * time.Millisecond })
	var effects atomic.Int32
	w.Handle("work", func(ctx context.Context, job *storage.Job) (workers.Effects, error) {
		return func(ctx context.Context, tx *storage.JobTx) error { effects.Add(1); return nil }, nil
	})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	j, _, _ := db.EnqueueJob(ctx, storage.NewJob{Kind: "work"})
	testwait.WaitFor(t, "the running workers do the job", jobDone(db, j.ID))
	w.Stop()
	w.Stop()
	if effects.Load() != 1 {
		t.Errorf("effects %d, want 1", effects.Load())
	}
}

func TestWorkers_Failpoint(t *testing.T) {
	t.Parallel()
	t.Run("ErrUnknown", func(t *testing.T) {
		t.Parallel()
		_, err := workers.New(workers.Config{DB: storagetest.Open(t), Failpoint: "everything"})
		if err == nil || !strings.Contains(err.Error(), "HEARTH_FAILPOINT") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("JobAfterLease", func(t *testing.T) {
		t.Parallel()
		db, _ := setup(t, time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC))
		var logs syncBuffer
		w := newWorkers(t, db, func(c *workers.Config) {
			c.Failpoint = workers.FailpointJobAfterLease
			c.Log = slog.New(slog.NewTextHandler(&logs, nil))
		})
		var effects atomic.Int32
		w.Handle("work", func(ctx context.Context, job *storage.Job) (workers.Effects, error) {
			effects.Add(1)
			return nil, nil
		})
		prepare(t, w)
		j, _, _ := db.EnqueueJob(ctx, storage.NewJob{Kind: "work"})
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error)
		go func() { _, err := w.RunOnce(runCtx); done <- err }()
		testwait.WaitFor(t, "the failpoint holds the job", func() bool { return strings.Contains(logs.String(), "failpoint job-after-lease") })
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("RunOnce = %v, want canceled", err)
		}
		got, _ := db.Job(ctx, j.ID)
		if got.State != storage.JobLeased || effects.Load() != 0 || !strings.Contains(logs.String(), j.ID) {
			t.Errorf("job = %+v, handler ran %d times; want leased, never run", got, effects.Load())
		}
	})
}

// syncBuffer is a bytes.Buffer safe for a logger and a test reading it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
