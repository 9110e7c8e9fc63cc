package storage

import (
	"context"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/jobq"
	"github.com/hearth-memory/hearth/storage/screen"
)

// The job queue is package jobq (docs/design.md, "Storage layout"); these
// are its names as the server uses them.
type (
	// NewJob is what EnqueueJob queues.
	NewJob = jobq.NewJob
	// Job is one row of the durable queue.
	Job = jobq.Job
	// JobCount is the number of jobs of one kind in one state.
	JobCount = jobq.Count
)

// Job states (docs/design.md R-J1) and the kinds the server queues; package
// jobq says what each means.
const (
	JobQueued = jobq.Queued
	JobLeased = jobq.Leased
	JobDone   = jobq.Done
	JobFailed = jobq.Failed

	KindExtraction  = jobq.KindExtraction
	KindMaintenance = jobq.KindMaintenance
	KindReview      = jobq.KindReview
	KindAnchorSweep = jobq.KindAnchorSweep

	// DefaultMaxAttempts is how often a job is tried when NewJob names no limit.
	DefaultMaxAttempts = jobq.DefaultMaxAttempts
)

var (
	// JobStates lists the states a job can be in.
	JobStates = jobq.States
	// ModelKinds are the job kinds that need a model server.
	ModelKinds = jobq.ModelKinds
)

// JobTx is a write transaction in which a job's effects run: CompleteJob hands
// one to the effects and commits it together with the job's completion, so
// the effects and the job's done state are written together or not at all
// (docs/design.md R-R6). A JobTx is valid only until the function it was given to returns.
type JobTx struct {
	db *DB
	tx *txn
}

// Now returns the transaction's time, the time every row it writes carries.
func (t *JobTx) Now() time.Time { return t.tx.Now }

// Store writes a new record as DB.Store does, inside the transaction.
func (t *JobTx) Store(ctx context.Context, nr NewRecord) (*Record, error) {
	if err := nr.validate(); err != nil {
		return nil, err
	}
	return t.db.storeTx(ctx, t.tx, nr)
}

// EnqueueJob queues a job as DB.EnqueueJob does, inside the transaction.
func (t *JobTx) EnqueueJob(ctx context.Context, nj NewJob) (*Job, bool, error) {
	if err := validateJob(&nj); err != nil {
		return nil, false, err
	}
	return t.db.enqueueTx(ctx, t.tx, nj)
}

// validateJob is NewJob.Validate, refusing with storage's Error.
func validateJob(nj *NewJob) error { return lift(nj.Validate()) }

// enqueueTx queues nj, which passed validateJob, inside tx (jobq.Enqueue).
func (db *DB) enqueueTx(ctx context.Context, tx *txn, nj NewJob) (*Job, bool, error) {
	job, created, err := jobq.Enqueue(ctx, tx, nj, db.newID)
	return job, created, lift(err)
}

// EnqueueJob queues nj, or with its Key taken returns the job holding it
// with created false (jobq.Enqueue). It returns Invalid for a bad NewJob
// (jobq.NewJob.Validate).
func (db *DB) EnqueueJob(ctx context.Context, nj NewJob) (job *Job, created bool, err error) {
	if err := validateJob(&nj); err != nil {
		return nil, false, err
	}
	if err := db.writeGrouped(ctx, opEnqueueJob, func(tx *txn) (err error) {
		job, created, err = db.enqueueTx(ctx, tx, nj)
		return err
	}); err != nil {
		return nil, false, err
	}
	return job, created, nil
}

// JobsDue reports whether a job of one of kinds may be leased now
// (jobq.Due), read outside any write: a poll that costs no transaction.
func (db *DB) JobsDue(ctx context.Context, kinds []string) (bool, error) {
	return jobq.Due(ctx, outside{db}, db.now(), kinds)
}

// LeaseJob leases the next due job of one of kinds to owner for lease
// (jobq.Lease), or returns nil when none is due. It returns Invalid for
// arguments jobq.CheckLease refuses.
func (db *DB) LeaseJob(ctx context.Context, owner string, kinds []string, lease time.Duration) (*Job, error) {
	if err := jobq.CheckLease(owner, kinds, lease); err != nil {
		return nil, lift(err)
	}
	if due, err := db.JobsDue(ctx, kinds); err != nil || !due {
		return nil, err
	}
	var job *Job
	if err := db.writeGrouped(ctx, opLeaseJob, func(tx *txn) (err error) {
		job, err = jobq.Lease(ctx, tx, owner, kinds, lease)
		return err
	}); err != nil {
		return nil, err
	}
	return job, nil
}

// CompleteJob runs effects (nil for none) and marks job done in one
// transaction, or writes nothing (jobq.Complete): Conflict (Field "job")
// when job lost its lease (it ran out and another worker took the job),
// effects' own error when they fail, the job then still leased.
func (db *DB) CompleteJob(ctx context.Context, job *Job, effects func(ctx context.Context, tx *JobTx) error) error {
	var at time.Time
	if err := db.writeGrouped(ctx, "complete job", func(tx *txn) error {
		at = tx.Now
		var run func() error
		if effects != nil {
			run = func() error { return effects(ctx, &JobTx{db: db, tx: tx}) }
		}
		return jobq.Complete(ctx, tx, job, run)
	}); err != nil {
		return err
	}
	jobq.Completed(job, at)
	return nil
}

// FailJob records a failed attempt of job, queued again after retryIn or
// failed for good on its last (jobq.Fail), and reloads job. It returns
// Conflict (Field "job") when the lease was lost.
func (db *DB) FailJob(ctx context.Context, job *Job, cause screen.Text, retryIn time.Duration) error {
	if err := db.writeGrouped(ctx, opFailJob, func(tx *txn) error {
		return jobq.Fail(ctx, tx, job, cause, retryIn)
	}); err != nil {
		return err
	}
	return db.reloadJob(ctx, job)
}

const opDeferJob = "defer job"

// DeferJob gives job back to the queue until runAfter without counting its
// attempt (jobq.Defer): it could not start for a reason of the server's
// own (the model budget is spent or paused), not of the job. It reloads
// job, and returns Conflict (Field "job") when the lease was lost.
func (db *DB) DeferJob(ctx context.Context, job *Job, cause screen.Text, runAfter time.Time) error {
	if err := db.writeGrouped(ctx, opDeferJob, func(tx *txn) error {
		return jobq.Defer(ctx, tx, job, cause, runAfter)
	}); err != nil {
		return err
	}
	return db.reloadJob(ctx, job)
}

// reloadJob sets *job to the job as stored.
func (db *DB) reloadJob(ctx context.Context, job *Job) error {
	cur, err := db.Job(ctx, job.ID)
	if err != nil {
		return err
	}
	*job = *cur
	return nil
}

// ReleaseLeases gives back the leases of the owners other than owner that
// are not running (jobq.ReleaseLeases) and returns how many: at start, the
// leases of a process that ended (a crash or a kill). An owner runs while
// it is held (HoldOwner) in this process or, on PostgreSQL, by another
// front end of the database, whose leases stay theirs.
func (db *DB) ReleaseLeases(ctx context.Context, owner string) (n int, err error) {
	var others []string
	if err := db.read(ctx, "lease owners", func(tx *txn) (err error) {
		others, err = jobq.LeaseOwners(ctx, tx, owner)
		return err
	}); err != nil {
		return 0, err
	}
	dead := map[string]bool{}
	for _, o := range others {
		held, err := db.ownerHeld(ctx, o)
		if err != nil {
			return 0, err
		}
		dead[o] = !held
	}
	err = db.writeGrouped(ctx, opReleaseLeases, func(tx *txn) (err error) {
		n, err = jobq.ReleaseLeases(ctx, tx, owner, func(o string) bool { return dead[o] })
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// CancelJobs deletes the untried queued jobs of kind but the one keyed keep
// (jobq.Cancel) and returns how many: the scheduler's, when review_at
// changed or was turned off.
func (db *DB) CancelJobs(ctx context.Context, kind, keep string, futureOnly bool) (n int, err error) {
	err = db.writeGrouped(ctx, opCancelJobs, func(tx *txn) (err error) {
		n, err = jobq.Cancel(ctx, tx, kind, keep, futureOnly)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// Job returns the job id (jobq.Get: NotFound for an unknown one).
func (db *DB) Job(ctx context.Context, id string) (*Job, error) {
	var job *Job
	if err := db.read(ctx, "job", func(tx *txn) (err error) {
		job, err = jobq.Get(ctx, tx, id)
		return err
	}); err != nil {
		return nil, err
	}
	return job, nil
}

// Jobs lists the jobs of kind in state, "" for any (jobq.List).
func (db *DB) Jobs(ctx context.Context, kind, state string) (jobs []*Job, err error) {
	err = db.read(ctx, "jobs", func(tx *txn) (err error) {
		jobs, err = jobq.List(ctx, tx, kind, state)
		return err
	})
	return jobs, err
}

// JobCounts counts the jobs by kind and state (jobq.Counts), for the
// queue depth the metrics report.
func (db *DB) JobCounts(ctx context.Context) (counts []JobCount, err error) {
	err = db.read(ctx, "job counts", func(tx *txn) (err error) {
		counts, err = jobq.Counts(ctx, tx)
		return err
	})
	return counts, err
}
