package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hearth-memory/hearth/storage/screen"
)

// Job states (docs/design.md R-J1). Queued jobs wait for run_after; a leased job is
// being worked on until its lease expires; done and failed are final.
const (
	JobQueued = "queued"
	JobLeased = "leased"
	JobDone   = "done"
	JobFailed = "failed"
)

// Job kinds the server queues.
const (
	// KindExtraction reads a session close's summary and notes for
	// candidate memories (docs/design.md R-Z4).
	KindExtraction = "extraction"
	// KindMaintenance is the run at review_at: candidate expiry and purge
	// (docs/design.md R-J3, R-J4).
	KindMaintenance = "maintenance"
	// KindReview is the nightly review of candidates by a model, queued by
	// the maintenance run when a model server is configured (docs/design.md R-J2).
	KindReview = "review"
)

// DefaultMaxAttempts is how often a job is tried when NewJob names no limit.
const DefaultMaxAttempts = 5

// maxLastErrorChars caps a job's last_error.
const maxLastErrorChars = 500

var kindPattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// NewJob is what EnqueueJob queues.
type NewJob struct {
	// Kind names the handler, e.g. "extraction" (lower case, digits, '-').
	Kind string
	// Payload is a JSON object that passed the screen; empty means {}.
	Payload screen.Text
	// Key, when set, makes the job unique: a second job with the same key is
	// not queued, and EnqueueJob returns the first.
	Key string
	// RunAfter is the earliest time the job runs; zero means now.
	RunAfter time.Time
	// MaxAttempts limits the tries; 0 means DefaultMaxAttempts.
	MaxAttempts int
}

// Job is one row of the durable queue.
type Job struct {
	ID          string
	Kind        string
	Key         string
	Payload     string // a JSON object
	State       string
	Attempts    int // tries so far, counting the current lease
	MaxAttempts int
	LeaseOwner  string
	LeaseExpiry time.Time // zero unless leased
	RunAfter    time.Time
	LastError   string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	FinishedAt  time.Time // when it became done or failed
}

func (nj *NewJob) validate() error {
	switch {
	case !kindPattern.MatchString(nj.Kind):
		return errorf(Invalid, "kind", "must be 1-40 of a-z, 0-9 and '-', starting with a letter")
	case nj.MaxAttempts < 0:
		return errorf(Invalid, "max_attempts", "must not be negative")
	case len(nj.Key) > 200:
		return errorf(Invalid, "key", "is longer than 200 bytes")
	}
	if p := strings.TrimSpace(nj.Payload.String()); p != "" {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(p), &obj); err != nil {
			return errorf(Invalid, "payload", "must be a JSON object")
		}
	}
	return nil
}

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
	if err := nj.validate(); err != nil {
		return nil, false, err
	}
	return t.db.enqueueTx(ctx, t.tx, nj)
}

// EnqueueJob queues a job. With a Key already taken it queues nothing and
// returns the existing job with created false.
//
// It returns Invalid for a bad kind (Field "kind"), a payload that is not a
// JSON object (Field "payload"), a negative MaxAttempts or an overlong key.
func (db *DB) EnqueueJob(ctx context.Context, nj NewJob) (job *Job, created bool, err error) {
	if err := nj.validate(); err != nil {
		return nil, false, err
	}
	if err := db.write(ctx, opEnqueueJob, func(tx *txn) (err error) {
		job, created, err = db.enqueueTx(ctx, tx, nj)
		return err
	}); err != nil {
		return nil, false, err
	}
	return job, created, nil
}

// enqueueTx inserts a validated job, or returns the job holding its key.
func (db *DB) enqueueTx(ctx context.Context, tx *txn, nj NewJob) (*Job, bool, error) {
	if nj.Key != "" {
		j, err := findJobTx(ctx, tx, `WHERE key = ?`, nj.Key)
		if err != nil {
			return nil, false, err
		}
		if len(j) > 0 {
			return j[0], false, nil
		}
	}
	id, err := db.newID(tx.Now)
	if err != nil {
		return nil, false, err
	}
	payload := strings.TrimSpace(nj.Payload.String())
	if payload == "" {
		payload = "{}"
	}
	maxAttempts := nj.MaxAttempts
	if maxAttempts == 0 {
		maxAttempts = DefaultMaxAttempts
	}
	runAfter := nj.RunAfter.UTC().Truncate(time.Millisecond)
	if runAfter.IsZero() {
		runAfter = tx.Now
	}
	var key any
	if nj.Key != "" {
		key = nj.Key
	}
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO jobs (id, kind, key, payload, state, max_attempts, run_after, created_at, updated_at)
		VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?)`,
		id, nj.Kind, key, payload, maxAttempts, runAfter.UnixMilli(), tx.Now.UnixMilli(), tx.Now.UnixMilli(),
	); err != nil {
		return nil, false, classify("enqueue job", err)
	}
	return &Job{
		ID: id, Kind: nj.Kind, Key: nj.Key, Payload: payload, State: JobQueued, MaxAttempts: maxAttempts,
		RunAfter: runAfter, CreatedAt: tx.Now, UpdatedAt: tx.Now,
	}, true, nil
}

// leasable is the condition, over jobs, for a job a worker may take now
// (?1): queued and due, or leased under a lease that has run out.
const leasable = `((state = 'queued' AND run_after <= ?1) OR (state = 'leased' AND lease_expires_at <= ?1))
	AND kind IN (SELECT value FROM json_each(?2))`

// LeaseJob takes the next job of one of kinds that is due (queued with
// run_after passed, or leased under an expired lease: its worker died),
// oldest run_after first, for owner until the lease runs out. The job's
// attempts count the lease. A job whose lease expired with no attempts left
// becomes failed instead. It returns nil and no error when nothing is due.
//
// It returns Invalid for an empty owner (Field "owner"), no kinds (Field
// "kinds") or a lease that is not positive (Field "lease").
func (db *DB) LeaseJob(ctx context.Context, owner string, kinds []string, lease time.Duration) (*Job, error) {
	switch {
	case owner == "":
		return nil, errorf(Invalid, "owner", "is required")
	case len(kinds) == 0:
		return nil, errorf(Invalid, "kinds", "names no kind")
	case lease <= 0:
		return nil, errorf(Invalid, "lease", "must be positive")
	}
	kindsJSON := jsonList(kinds)
	// A read first: an idle poll costs no write transaction.
	var due bool
	if err := db.lite.Reader().QueryRowContext(ctx,
		`SELECT EXISTS (SELECT 1 FROM jobs WHERE `+leasable+`)`, db.now().UnixMilli(), kindsJSON,
	).Scan(&due); err != nil {
		return nil, classify("lease job", err)
	}
	if !due {
		return nil, nil
	}

	var job *Job
	if err := db.write(ctx, opLeaseJob, func(tx *txn) (err error) {
		job, err = leaseTx(ctx, tx, owner, kindsJSON, lease)
		return err
	}); err != nil {
		return nil, err
	}
	return job, nil
}

// leaseTx leases the next due job for owner, failing on the way the due
// jobs whose last lease ran out; nil when none is due.
func leaseTx(ctx context.Context, tx *txn, owner string, kindsJSON any, lease time.Duration) (*Job, error) {
	for {
		jobs, err := findJobTx(ctx, tx, `WHERE `+leasable+` ORDER BY run_after, id LIMIT 1`, tx.Now.UnixMilli(), kindsJSON)
		if err != nil {
			return nil, err
		}
		if len(jobs) == 0 {
			return nil, nil
		}
		j := jobs[0]
		if j.State == JobLeased && j.Attempts >= j.MaxAttempts {
			msg := fmt.Sprintf("the lease of %s ran out on the last of %d attempts", j.LeaseOwner, j.MaxAttempts)
			if err := finishTx(ctx, tx, j, JobFailed, lastError(j.LastError, msg)); err != nil {
				return nil, err
			}
			continue
		}
		if _, err := tx.ExecContext(ctx, `
			UPDATE jobs SET state = 'leased', attempts = attempts + 1, lease_owner = ?, lease_expires_at = ?, updated_at = ?
			WHERE id = ?`,
			owner, tx.Now.Add(lease).UnixMilli(), tx.Now.UnixMilli(), j.ID,
		); err != nil {
			return nil, classify("lease job", err)
		}
		j.State, j.Attempts, j.LeaseOwner, j.LeaseExpiry, j.UpdatedAt = JobLeased, j.Attempts+1, owner, tx.Now.Add(lease), tx.Now
		return j, nil
	}
}

// CompleteJob runs effects (nil for none) and marks job done in one
// transaction, provided job still holds its lease: same owner, same attempt,
// still leased. If effects fail, nothing is written and their error is
// returned; the job stays leased for the caller to fail.
//
// It returns Conflict (Field "job") when the lease was lost (it ran out and
// another worker took the job, or the job is no longer leased); then the
// effects are not run.
func (db *DB) CompleteJob(ctx context.Context, job *Job, effects func(ctx context.Context, tx *JobTx) error) error {
	var at time.Time
	if err := db.write(ctx, "complete job", func(tx *txn) error {
		if err := holdsLeaseTx(ctx, tx, job); err != nil {
			return err
		}
		if effects != nil {
			if err := effects(ctx, &JobTx{db: db, tx: tx}); err != nil {
				return err
			}
		}
		at = tx.Now
		return finishTx(ctx, tx, job, JobDone, job.LastError)
	}); err != nil {
		return err
	}
	job.State, job.LeaseOwner, job.LeaseExpiry, job.UpdatedAt, job.FinishedAt = JobDone, "", time.Time{}, at, at
	return nil
}

// FailJob records a failed attempt of job, which must still hold its lease.
// With attempts left the job goes back to queued and runs again after
// retryIn; otherwise it becomes failed, and stays so, visible with its
// last_error. cause is kept (cut to 500 characters) as last_error.
//
// It returns Conflict (Field "job") when the lease was lost.
func (db *DB) FailJob(ctx context.Context, job *Job, cause screen.Text, retryIn time.Duration) error {
	if err := db.write(ctx, opFailJob, func(tx *txn) error {
		if err := holdsLeaseTx(ctx, tx, job); err != nil {
			return err
		}
		msg := lastError(job.LastError, fmt.Sprintf("attempt %d: %s", job.Attempts, cause.String()))
		return retryOrFailTx(ctx, tx, job, msg, tx.Now.Add(max(retryIn, 0)))
	}); err != nil {
		return err
	}
	cur, err := db.Job(ctx, job.ID)
	if err != nil {
		return err
	}
	*job = *cur
	return nil
}

const opDeferJob = "defer job"

// DeferJob gives job, which must still hold its lease, back to the queue
// without counting its attempt: it could not start for a reason of the
// server's own (the model budget is spent or paused), not of the job. It
// runs again after runAfter, when its kind is leased again. cause is kept as
// last_error.
//
// It returns Conflict (Field "job") when the lease was lost.
func (db *DB) DeferJob(ctx context.Context, job *Job, cause screen.Text, runAfter time.Time) error {
	if err := db.write(ctx, opDeferJob, func(tx *txn) error {
		if err := holdsLeaseTx(ctx, tx, job); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `
			UPDATE jobs SET state = 'queued', attempts = attempts - 1, lease_owner = '', lease_expires_at = NULL,
				run_after = ?, last_error = ?, updated_at = ?
			WHERE id = ?`,
			runAfter.UnixMilli(), lastError("", cause.String()), tx.Now.UnixMilli(), job.ID,
		); err != nil {
			return classify("defer job", err)
		}
		return nil
	}); err != nil {
		return err
	}
	cur, err := db.Job(ctx, job.ID)
	if err != nil {
		return err
	}
	*job = *cur
	return nil
}

// retryOrFailTx ends a failed attempt of j: with attempts left the job is
// queued again to run at runAfter, otherwise it becomes failed. msg is kept
// as last_error either way.
func retryOrFailTx(ctx context.Context, tx *txn, j *Job, msg string, runAfter time.Time) error {
	if j.Attempts >= j.MaxAttempts {
		return finishTx(ctx, tx, j, JobFailed, msg)
	}
	if _, err := tx.ExecContext(ctx, `
		UPDATE jobs SET state = 'queued', lease_owner = '', lease_expires_at = NULL,
			run_after = ?, last_error = ?, updated_at = ?
		WHERE id = ?`,
		runAfter.UnixMilli(), msg, tx.Now.UnixMilli(), j.ID,
	); err != nil {
		return classify("requeue job", err)
	}
	return nil
}

// ReleaseLeases gives back every lease not held by owner: at start, the
// leases of an earlier process, which can only have ended (a crash or a
// kill), since one daemon owns its database. A released job is queued again
// at once (its attempt counted); one with no attempts left becomes failed.
// It returns how many jobs it released or failed.
func (db *DB) ReleaseLeases(ctx context.Context, owner string) (int, error) {
	var n int
	if err := db.write(ctx, opReleaseLeases, func(tx *txn) error {
		jobs, err := findJobTx(ctx, tx, `WHERE state = 'leased' AND lease_owner <> ?`, owner)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			msg := lastError(j.LastError, fmt.Sprintf("attempt %d: lease of %s released at start (the process ended)", j.Attempts, j.LeaseOwner))
			// A released job runs again at once (or when it was due, if later).
			runAfter := j.RunAfter
			if runAfter.After(tx.Now) {
				runAfter = tx.Now
			}
			if err := retryOrFailTx(ctx, tx, j, msg, runAfter); err != nil {
				return err
			}
		}
		n = len(jobs)
		return nil
	}); err != nil {
		return 0, err
	}
	return n, nil
}

// CancelJobs deletes the queued jobs of kind that were never tried, but the
// one with key keep (none when keep is ""). With futureOnly, only jobs whose
// run_after is still ahead go; due ones stay and run. It returns how many it
// deleted. The scheduler uses it when review_at changed or was turned off.
func (db *DB) CancelJobs(ctx context.Context, kind, keep string, futureOnly bool) (int, error) {
	var n int
	if err := db.write(ctx, opCancelJobs, func(tx *txn) error {
		q := `DELETE FROM jobs WHERE kind = ? AND state = 'queued' AND attempts = 0 AND COALESCE(key, '') <> ?`
		args := []any{kind, keep}
		if keep == "" {
			args[1] = "\x00" // matches no key
		}
		if futureOnly {
			q += ` AND run_after > ?`
			args = append(args, tx.Now.UnixMilli())
		}
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return classify("cancel jobs", err)
		}
		n = rowsAffected(res)
		return nil
	}); err != nil {
		return 0, err
	}
	return n, nil
}

// Job returns the job id. It returns NotFound (Field "id") for an unknown job.
func (db *DB) Job(ctx context.Context, id string) (*Job, error) {
	var jobs []*Job
	if err := db.read(ctx, "job", func(tx *txn) (err error) {
		jobs, err = findJobTx(ctx, tx, `WHERE id = ?`, id)
		return err
	}); err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, errorf(NotFound, "id", "no job has this id")
	}
	return jobs[0], nil
}

// Jobs returns the jobs of kind (every kind when "") in state (every state
// when ""), oldest first.
func (db *DB) Jobs(ctx context.Context, kind, state string) ([]*Job, error) {
	var jobs []*Job
	err := db.read(ctx, "jobs", func(tx *txn) (err error) {
		jobs, err = findJobTx(ctx, tx, `WHERE (?1 = '' OR kind = ?1) AND (?2 = '' OR state = ?2) ORDER BY created_at, id`, kind, state)
		return err
	})
	return jobs, err
}

// holdsLeaseTx returns Conflict (Field "job") unless job is still leased by
// the same owner on the same attempt.
func holdsLeaseTx(ctx context.Context, tx *txn, job *Job) error {
	var n int
	if err := tx.QueryRowContext(ctx, `
		SELECT COUNT(*) FROM jobs WHERE id = ? AND state = 'leased' AND lease_owner = ? AND attempts = ?`,
		job.ID, job.LeaseOwner, job.Attempts,
	).Scan(&n); err != nil {
		return classify("job lease", err)
	}
	if n == 0 {
		return errorf(Conflict, "job", "the lease on job %s (attempt %d) was lost", job.ID, job.Attempts)
	}
	return nil
}

// finishTx moves a job to a final state, done or failed.
func finishTx(ctx context.Context, tx *txn, job *Job, state, lastErr string) error {
	if _, err := tx.ExecContext(ctx, `
		UPDATE jobs SET state = ?, lease_owner = '', lease_expires_at = NULL, last_error = ?,
			updated_at = ?, done_at = ?
		WHERE id = ?`,
		state, lastErr, tx.Now.UnixMilli(), tx.Now.UnixMilli(), job.ID,
	); err != nil {
		return classify("finish job", err)
	}
	return nil
}

// lastError cuts msg (prefixed by an earlier error, if any, that it follows)
// to maxLastErrorChars, keeping the newest text, and redacts it: a job's
// error may quote anything.
func lastError(prev, msg string) string {
	if prev != "" && msg != "" {
		msg = msg + "; before: " + prev
	}
	if utf8.RuneCountInString(msg) > maxLastErrorChars {
		r := []rune(msg)
		msg = string(r[:maxLastErrorChars-1]) + "…"
	}
	return screen.Redact(msg).String()
}

const jobColumns = `id, kind, COALESCE(key, ''), payload, state, attempts, max_attempts, lease_owner,
	lease_expires_at, run_after, last_error, created_at, updated_at, done_at`

// findJobTx returns the jobs matching where (a clause over jobs).
func findJobTx(ctx context.Context, tx *txn, where string, args ...any) ([]*Job, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+jobColumns+` FROM jobs `+where, args...)
	if err != nil {
		return nil, classify("find jobs", err)
	}
	defer rows.Close()
	var out []*Job
	for rows.Next() {
		var (
			j                          Job
			lease, done                sql.NullInt64
			runAfter, created, updated int64
		)
		if err := rows.Scan(&j.ID, &j.Kind, &j.Key, &j.Payload, &j.State, &j.Attempts, &j.MaxAttempts, &j.LeaseOwner,
			&lease, &runAfter, &j.LastError, &created, &updated, &done); err != nil {
			return nil, classify("find jobs", err)
		}
		j.LeaseExpiry = fromMS(lease)
		j.FinishedAt = fromMS(done)
		j.RunAfter = time.UnixMilli(runAfter).UTC()
		j.CreatedAt = time.UnixMilli(created).UTC()
		j.UpdatedAt = time.UnixMilli(updated).UTC()
		out = append(out, &j)
	}
	return out, classify("find jobs", rows.Err())
}
