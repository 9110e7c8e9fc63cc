// Package workers runs Hearth's background work off the durable job queue in
// storage (docs/design.md R-J). A Workers value leases due jobs one at a time and
// completes each in the same transaction as its effects, so a job's effects
// are applied exactly once even when the process dies between lease and
// completion: the lease of a dead process is released at the next start and
// the job runs again. Failed attempts retry with exponential backoff up to
// the job's attempt limit and then stay failed, with their last error.
//
// The Scheduler keeps one maintenance job queued for the next review_at
// (local time); the job is durable, so a run missed while the machine was
// off runs once at the next start. Maintenance expires old candidates and
// purges what retention allows (storage.Maintenance).
//
// With a model server configured (Config.Models), the runner also probes the
// servers on its own goroutine and runs the model jobs while one is live:
// extraction of candidates from session closes (Extract) and the nightly
// review that each maintenance run queues (Review), whose verdicts apply only
// when their guards hold. Without one those jobs wait, queued.
//
// Config.Failpoint holds a job at a chosen step for the crash tests (see
// its doc); a normal build never sets it.
package workers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hearth-memory/hearth/server/models"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/server/sweep"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
)

// The failpoints: hold the first leased job right after its lease, or
// after its handler ran and before its completion.
const (
	FailpointJobAfterLease     = "job-after-lease"
	FailpointJobBeforeComplete = "job-before-complete"
)

// Defaults for Config.
const (
	DefaultPoll  = time.Second
	DefaultLease = 10 * time.Minute
)

// Handler runs one job. Slow work (a model call) happens in the handler,
// outside any transaction; the Effects it returns run in the transaction
// that marks the job done, so they commit with the completion or not at
// all. An error fails the attempt.
type Handler func(ctx context.Context, job *storage.Job) (Effects, error)

// Effects writes a job's results inside its completion transaction. Nil
// writes nothing.
type Effects = func(ctx context.Context, tx *storage.JobTx) error

// Config is what Workers run with.
type Config struct {
	// DB is the store holding the queue. Required.
	DB *storage.DB
	// Options supply review_at, candidate_expiry_days and
	// retention_deleted_days.
	Options options.Options
	// Location is the time zone of review_at; nil means time.Local (TZ).
	Location *time.Location
	// Now is the clock the scheduler reads; nil means DB.Now, the clock the
	// queue's times are written with.
	Now func() time.Time
	// Log receives failures; nil means slog.Default().
	Log *slog.Logger
	// Owner names this process's leases; "" makes a unique one.
	Owner string
	// Poll is how often an idle runner looks for due jobs (DefaultPoll).
	Poll time.Duration
	// Lease is how long a job is held before another worker may take it
	// (DefaultLease).
	Lease time.Duration
	// Failpoint exists for the crash tests (a daemon built with the
	// failpoint tag reads it from HEARTH_FAILPOINT; a normal build never
	// sets it). With FailpointJobAfterLease the runner, right after leasing
	// its first job, logs "failpoint job-after-lease" with the job id and
	// holds the job without running it until the workers stop, so a test
	// can kill the process between lease and completion. With
	// FailpointJobBeforeComplete it runs the first job's handler (a model
	// call, say) and holds the job, logging "failpoint
	// job-before-complete", before completing it. Unset, it does nothing;
	// any other value fails New.
	Failpoint string
	// Models, when it has a server configured, runs extraction and the
	// nightly review, probed from the runner (see models.go); nil or
	// unconfigured leaves those jobs queued. Check is required with it.
	Models *models.Router
	Check  Check
	// Sweeper, when set and reading Home Assistant, runs the entity sweep
	// every anchor_sweep_hours (SweepSchedule). Without Home Assistant
	// there is nothing to sweep on a schedule.
	Sweeper *sweep.Sweeper
}

// Workers is the queue runner with its handlers and the scheduler.
type Workers struct {
	db        *storage.DB
	log       *slog.Logger
	owner     string
	poll      time.Duration
	lease     time.Duration
	failpoint string
	now       func() time.Time
	handlers  map[string]Handler
	kinds     []string
	sched     Scheduler
	// ready gates kinds (HandleWhen); models runs the probes.
	ready  map[string]func() bool
	models *models.Router
	held   atomic.Bool // the failpoint held its job
	idle   []IdleFunc  // asked for work on each idle poll (idle.go)
	sweep  *SweepSchedule
	onPoll []func() // called at every poll (OnPoll)

	stop context.CancelFunc
	done chan struct{}
	// release ends the hold on the owner (holdOwner).
	release func()
	mu      sync.Mutex // guards stop, done and release

	// backoff is the runner's wait while the store refuses writes
	// (faults.go); zero otherwise. Only the runner touches it.
	backoff time.Duration
}

// New returns Workers with the maintenance handler registered. It returns
// an error for an unknown failpoint or a missing DB.
func New(cfg Config) (*Workers, error) {
	if cfg.DB == nil {
		return nil, errors.New("workers: DB is required")
	}
	if cfg.Failpoint != "" && cfg.Failpoint != FailpointJobAfterLease && cfg.Failpoint != FailpointJobBeforeComplete {
		return nil, fmt.Errorf("workers: unknown failpoint %q (HEARTH_FAILPOINT)", cfg.Failpoint)
	}
	w := &Workers{
		db:        cfg.DB,
		log:       cfg.Log,
		owner:     cfg.Owner,
		poll:      cfg.Poll,
		lease:     cfg.Lease,
		failpoint: cfg.Failpoint,
		now:       cfg.Now,
		handlers:  map[string]Handler{},
		ready:     map[string]func() bool{},
		sched:     Scheduler{At: cfg.Options.ReviewAt, Location: cfg.Location},
	}
	if w.log == nil {
		w.log = slog.Default()
	}
	if w.owner == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		w.owner = fmt.Sprintf("pid%d-%s", os.Getpid(), hex.EncodeToString(b[:]))
	}
	if w.poll <= 0 {
		w.poll = DefaultPoll
	}
	if w.lease <= 0 {
		w.lease = DefaultLease
	}
	if w.now == nil {
		db := cfg.DB
		w.now = func() time.Time { return db.Now() }
	}
	if w.sched.Location == nil {
		w.sched.Location = time.Local
	}
	w.Handle(storage.KindMaintenance, Maintenance(cfg.DB, cfg.Options, w.log))
	if err := w.handleModels(cfg); err != nil {
		return nil, err
	}
	if cfg.Sweeper != nil && cfg.Sweeper.HomeAssistant() && cfg.Options.AnchorSweepHours > 0 {
		w.sweep = &SweepSchedule{Every: time.Duration(cfg.Options.AnchorSweepHours) * time.Hour,
			HomeAssistant: cfg.Sweeper.HomeAssistant()}
		w.Handle(storage.KindAnchorSweep, AnchorSweep(cfg.DB, cfg.Sweeper, *w.sweep))
	}
	return w, nil
}

// Handle registers h for jobs of kind, replacing any handler before it. Jobs
// of kinds without a handler stay queued. Call it before Start.
func (w *Workers) Handle(kind string, h Handler) {
	w.handlers[kind] = h
	if !slices.Contains(w.kinds, kind) {
		w.kinds = append(w.kinds, kind)
		slices.Sort(w.kinds)
	}
}

// Owner returns the name this process's leases carry.
func (w *Workers) Owner() string { return w.owner }

// Start prepares the queue and starts the runner: it releases the leases of
// earlier processes (their jobs run again), makes sure the next maintenance
// run is queued, and then runs due jobs in the background until Stop.
//
// A store that refuses writes (a full disk, a damaged file) does not stop
// Start: the server must come up to serve reads and say what is wrong. The
// runner then prepares again at each of its polls, backing off as it does
// for a refused lease, until the store takes writes.
func (w *Workers) Start(ctx context.Context) error {
	unprepared := false
	if err := w.Prepare(ctx); err != nil {
		if !refused(err) {
			return err
		}
		w.queueError(ctx, err)
		// The runner starts out waiting: it says so once, here.
		w.backoff = w.poll
		unprepared = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stop != nil {
		return errors.New("workers: already started")
	}
	loopCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	w.stop, w.done = stop, make(chan struct{})
	go w.loop(loopCtx, w.done, unprepared)
	return nil
}

// Prepare does Start's work but the background runner: it releases the
// leases of earlier processes and schedules maintenance. Tests that drive
// the runner with RunOnce call it instead of Start.
func (w *Workers) Prepare(ctx context.Context) error {
	if err := w.holdOwner(ctx); err != nil {
		return fmt.Errorf("workers: hold the lease owner: %w", err)
	}
	n, err := w.db.ReleaseLeases(ctx, w.owner)
	if err != nil {
		return fmt.Errorf("workers: release leases: %w", err)
	}
	if n > 0 {
		w.log.InfoContext(ctx, "released job leases of an earlier process", "jobs", n)
	}
	if err := w.sched.Ensure(ctx, w.db, w.now()); err != nil {
		return fmt.Errorf("workers: schedule maintenance: %w", err)
	}
	if w.sweep != nil {
		if err := w.sweep.Ensure(ctx, w.db, w.now()); err != nil {
			return fmt.Errorf("workers: schedule the anchor sweep: %w", err)
		}
	}
	return nil
}

// Stop stops the runner and waits for it; a job in flight is abandoned with
// its lease, which the next start releases. Stop is safe to call twice and
// without Start.
func (w *Workers) Stop() {
	w.mu.Lock()
	stop, done := w.stop, w.done
	w.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.release != nil {
		w.release()
		w.release = nil
	}
}

// holdOwner marks the owner as running for the store (storage.DB.HoldOwner),
// once, until Stop: another front end's start then leaves its leases
// alone.
func (w *Workers) holdOwner(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.release != nil {
		return nil
	}
	release, err := w.db.HoldOwner(ctx, w.owner)
	if err != nil {
		return err
	}
	w.release = release
	return nil
}

func (w *Workers) loop(ctx context.Context, done chan struct{}, unprepared bool) {
	defer close(done)
	defer w.probe(ctx)()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var err error
		if unprepared {
			if err = w.Prepare(ctx); err != nil {
				if !refused(err) && ctx.Err() == nil {
					w.log.ErrorContext(ctx, "job queue", "err", err)
				}
				t.Reset(w.nextPoll(err))
				continue
			}
			unprepared = false
		}
		for _, f := range w.onPoll {
			f()
		}
		for ctx.Err() == nil {
			var ran bool
			if ran, err = w.RunOnce(ctx); err != nil && ctx.Err() == nil {
				w.queueError(ctx, err)
			}
			if !ran && err == nil {
				w.idlePoll(ctx)
			}
			if !ran || err != nil {
				break
			}
		}
		t.Reset(w.nextPoll(err))
	}
}

// RunOnce leases one due job of a kind with a handler and runs it to
// completion or failure. It reports whether there was a job. A handler's
// failure is recorded on the job, not returned; the error is the queue's own.
// The nightly kinds come first, each leased and run under its exclusive
// run (runNightly), skipped while another front end holds it.
func (w *Workers) RunOnce(ctx context.Context) (ran bool, err error) {
	excl, rest := splitNightly(w.readyKinds())
	for _, kind := range excl {
		if ran, err := w.runNightly(ctx, kind); ran || err != nil {
			return ran, err
		}
	}
	if len(rest) == 0 {
		return false, nil
	}
	return w.leaseAndRun(ctx, rest)
}

// leaseAndRun leases one due job of kinds and runs it (RunOnce).
func (w *Workers) leaseAndRun(ctx context.Context, kinds []string) (ran bool, err error) {
	job, err := w.db.LeaseJob(ctx, w.owner, kinds, w.lease)
	if err != nil || job == nil {
		return false, err
	}
	if w.failpoint == FailpointJobAfterLease {
		w.log.WarnContext(ctx, "failpoint "+FailpointJobAfterLease+": holding a leased job", "job", job.ID, "kind", job.Kind)
		<-ctx.Done()
		return true, ctx.Err()
	}
	w.run(ctx, job)
	return true, nil
}

// run runs job's handler and completes the job with its effects, or fails
// the attempt. After a maintenance job the next run is scheduled.
func (w *Workers) run(ctx context.Context, job *storage.Job) {
	err := w.attempt(ctx, job)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		// Stopping: the lease is released at the next start.
		return
	case storage.ErrorCode(err) == storage.Conflict:
		w.log.WarnContext(ctx, "job lease lost", "job", job.ID, "kind", job.Kind, "err", err)
	case errors.Is(err, models.ErrBudget):
		// The budget ran out (or calls were paused) while the job was
		// leased: it waits, its attempt given back, until the gate opens.
		if ferr := w.db.DeferJob(ctx, job, screen.Redact(budgetWait), w.now().Add(w.poll)); ferr != nil {
			w.log.ErrorContext(ctx, "defer job", "job", job.ID, "err", ferr)
		} else {
			w.log.InfoContext(ctx, "job waits for the model budget", "job", job.ID, "kind", job.Kind)
		}
	default:
		retry := Backoff(job.Attempts)
		if ferr := w.db.FailJob(ctx, job, screen.Redact(err.Error()), retry); ferr != nil {
			w.log.ErrorContext(ctx, "record job failure", "job", job.ID, "err", ferr)
		} else {
			w.log.WarnContext(ctx, "job failed", "job", job.ID, "kind", job.Kind, "attempt", job.Attempts,
				"state", job.State, "err", screen.Redact(err.Error()).String())
		}
	}
	if job.Kind == storage.KindMaintenance {
		if err := w.sched.Ensure(ctx, w.db, w.now()); err != nil && ctx.Err() == nil {
			w.log.ErrorContext(ctx, "schedule maintenance", "err", err)
		}
		w.checkIntegrity(ctx)
	}
}

// attempt runs the handler and the completion, turning a panic into an
// error (the completion's transaction is rolled back by then).
func (w *Workers) attempt(ctx context.Context, job *storage.Job) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	h := w.handlers[job.Kind]
	if h == nil {
		return fmt.Errorf("no handler for kind %q", job.Kind)
	}
	effects, err := h(ctx, job)
	if err != nil {
		return err
	}
	if w.failpoint == FailpointJobBeforeComplete && w.held.CompareAndSwap(false, true) {
		w.log.WarnContext(ctx, "failpoint "+FailpointJobBeforeComplete+": holding a job before its completion", "job", job.ID, "kind", job.Kind)
		<-ctx.Done()
		return ctx.Err()
	}
	return w.db.CompleteJob(ctx, job, effects)
}

// budgetWait is the last_error of a job that waits for the model budget.
const budgetWait = "waiting: the daily model budget is spent or model calls are paused (memory_status budget)"

// Backoff is the wait before a failed job's next attempt: 30 s after the
// first, doubling with each attempt, at most an hour.
func Backoff(attempt int) time.Duration {
	d := 30 * time.Second
	for i := 1; i < attempt && d < time.Hour; i++ {
		d *= 2
	}
	return min(d, time.Hour)
}
