// Package jobq is the durable job queue below the record domain
// (docs/design.md, "Storage layout"; R-J1): jobs of a kind with a
// screened JSON payload, queued until they are due, leased by a worker
// for a while, then done, failed, or queued again; their counts; and the
// log of anchor sweeps, the scheduled job whose runs status reports.
//
// It works inside the engine's transactions (*engine.Tx) and knows
// nothing of records: what a job does to them is the storage package's
// (JobTx), committed with the job's completion. Its refusals are
// *errs.Error, which storage hands on as its own Error. Its SQL is all in
// sql.go.
package jobq

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hearth-memory/hearth/storage/internal/engine"
	"github.com/hearth-memory/hearth/storage/internal/errs"
	"github.com/hearth-memory/hearth/storage/internal/sqlval"
	"github.com/hearth-memory/hearth/storage/screen"
)

// Job states (docs/design.md R-J1). Queued jobs wait for run_after; a leased job is
// being worked on until its lease expires; done and failed are final.
const (
	Queued = "queued"
	Leased = "leased"
	Done   = "done"
	Failed = "failed"
)

// States lists the states a job can be in.
var States = []string{Queued, Leased, Done, Failed}

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
	// KindAnchorSweep is the scheduled entity sweep (docs/design.md R-H1): a durable job
	// every anchor_sweep_hours.
	KindAnchorSweep = "anchor-sweep"
)

// ModelKinds are the job kinds that need a model server: extraction and
// the nightly review. They wait, queued, while no server is configured or
// live.
var ModelKinds = []string{KindExtraction, KindReview}

// enginePostgres is what engine.Tx.Engine names PostgreSQL's engine.
const enginePostgres = "postgres"

// DefaultMaxAttempts is how often a job is tried when NewJob names no limit.
const DefaultMaxAttempts = 5

// maxLastErrorChars caps a job's last_error.
const maxLastErrorChars = 500

var kindPattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// NewJob is what Enqueue queues.
type NewJob struct {
	// Kind names the handler, e.g. "extraction" (lower case, digits, '-').
	Kind string
	// Payload is a JSON object that passed the screen; empty means {}.
	Payload screen.Text
	// Key, when set, makes the job unique: a second job with the same key is
	// not queued, and Enqueue returns the first.
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

// Count is the number of jobs of one kind in one state.
type Count struct {
	Kind  string
	State string
	N     int
}

// Validate returns Invalid for a bad kind (Field "kind"), a payload that
// is not a JSON object (Field "payload"), a negative MaxAttempts or an
// overlong key.
func (nj *NewJob) Validate() error {
	switch {
	case !kindPattern.MatchString(nj.Kind):
		return errs.Errorf(errs.Invalid, "kind", "must be 1-40 of a-z, 0-9 and '-', starting with a letter")
	case nj.MaxAttempts < 0:
		return errs.Errorf(errs.Invalid, "max_attempts", "must not be negative")
	case len(nj.Key) > 200:
		return errs.Errorf(errs.Invalid, "key", "is longer than 200 bytes")
	}
	if p := strings.TrimSpace(nj.Payload.String()); p != "" {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(p), &obj); err != nil {
			return errs.Errorf(errs.Invalid, "payload", "must be a JSON object")
		}
	}
	return nil
}

// Enqueue inserts nj, which passed Validate, under an id from newID; with
// its Key already taken it inserts nothing and returns the job holding it,
// with created false.
func Enqueue(ctx context.Context, tx *engine.Tx, nj NewJob, newID func(time.Time) (string, error)) (job *Job, created bool, err error) {
	if nj.Key != "" {
		j, err := find(ctx, tx, sqlByKey, nj.Key)
		if err != nil {
			return nil, false, err
		}
		if len(j) > 0 {
			return j[0], false, nil
		}
	}
	id, err := newID(tx.Now)
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
	if _, err := tx.ExecContext(ctx, sqlInsert,
		id, nj.Kind, key, payload, maxAttempts, runAfter.UnixMilli(), tx.Now.UnixMilli(), tx.Now.UnixMilli(),
	); err != nil {
		return nil, false, errs.Wrap("enqueue job", err)
	}
	return &Job{
		ID: id, Kind: nj.Kind, Key: nj.Key, Payload: payload, State: Queued, MaxAttempts: maxAttempts,
		RunAfter: runAfter, CreatedAt: tx.Now, UpdatedAt: tx.Now,
	}, true, nil
}

// CheckLease returns Invalid for an empty owner (Field "owner"), no kinds
// (Field "kinds") or a lease that is not positive (Field "lease").
func CheckLease(owner string, kinds []string, lease time.Duration) error {
	switch {
	case owner == "":
		return errs.Errorf(errs.Invalid, "owner", "is required")
	case len(kinds) == 0:
		return errs.Errorf(errs.Invalid, "kinds", "names no kind")
	case lease <= 0:
		return errs.Errorf(errs.Invalid, "lease", "must be positive")
	}
	return nil
}

// RowQuerier runs one statement outside a transaction: a *sql.DB, or the
// store's reader on either engine (its statements rebound on PostgreSQL).
type RowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Due reports whether a job of one of kinds may be leased at now, read on
// pool outside any write: an idle poll costs no write transaction.
func Due(ctx context.Context, pool RowQuerier, now time.Time, kinds []string) (bool, error) {
	var due bool
	if err := pool.QueryRowContext(ctx, sqlDue, now.UnixMilli(), sqlval.Strings(kinds)).Scan(&due); err != nil {
		return false, errs.Wrap("lease job", err)
	}
	return due, nil
}

// Lease takes the next job of one of kinds that is due (queued with
// run_after passed, or leased under an expired lease: its worker died),
// oldest run_after first, for owner until the lease runs out; the job's
// attempts count the lease. A due job whose lease ran out on its last
// attempt becomes failed on the way. It returns nil when none is due.
func Lease(ctx context.Context, tx *engine.Tx, owner string, kinds []string, lease time.Duration) (*Job, error) {
	list := sqlval.Strings(kinds)
	next := sqlNext
	if tx.Engine() == enginePostgres {
		next = sqlNextSkipLocked
	}
	for {
		jobs, err := find(ctx, tx, next, tx.Now.UnixMilli(), list)
		if err != nil {
			return nil, err
		}
		if len(jobs) == 0 {
			return nil, nil
		}
		j := jobs[0]
		if j.State == Leased && j.Attempts >= j.MaxAttempts {
			msg := fmt.Sprintf("the lease of %s ran out on the last of %d attempts", j.LeaseOwner, j.MaxAttempts)
			if err := finish(ctx, tx, j, Failed, lastError(j.LastError, msg)); err != nil {
				return nil, err
			}
			continue
		}
		if _, err := tx.ExecContext(ctx, sqlLease,
			owner, tx.Now.Add(lease).UnixMilli(), tx.Now.UnixMilli(), j.ID,
		); err != nil {
			return nil, errs.Wrap("lease job", err)
		}
		j.State, j.Attempts, j.LeaseOwner, j.LeaseExpiry, j.UpdatedAt = Leased, j.Attempts+1, owner, tx.Now.Add(lease), tx.Now
		return j, nil
	}
}

// Complete runs effects (nil for none) and marks job done, provided job
// still holds its lease (Conflict, Field "job", when not; then effects do
// not run). An error of effects is returned as it is, and job stays
// leased. The caller sets job's fields once the transaction commits
// (Completed).
func Complete(ctx context.Context, tx *engine.Tx, job *Job, effects func() error) error {
	if err := holdsLease(ctx, tx, job); err != nil {
		return err
	}
	if effects != nil {
		if err := effects(); err != nil {
			return err
		}
	}
	return finish(ctx, tx, job, Done, job.LastError)
}

// Completed sets job's fields as Complete, committed at at, left the row.
func Completed(job *Job, at time.Time) {
	job.State, job.LeaseOwner, job.LeaseExpiry, job.UpdatedAt, job.FinishedAt = Done, "", time.Time{}, at, at
}

// Fail records a failed attempt of job, which must still hold its lease
// (Conflict, Field "job", when not). With attempts left the job is queued
// again to run after retryIn; otherwise it becomes failed, for good.
// cause joins last_error (see lastError).
func Fail(ctx context.Context, tx *engine.Tx, job *Job, cause screen.Text, retryIn time.Duration) error {
	if err := holdsLease(ctx, tx, job); err != nil {
		return err
	}
	msg := lastError(job.LastError, fmt.Sprintf("attempt %d: %s", job.Attempts, cause.String()))
	return retryOrFail(ctx, tx, job, msg, tx.Now.Add(max(retryIn, 0)))
}

// Defer queues job, which must still hold its lease (Conflict, Field
// "job", when not), again at runAfter without counting its attempt.
// cause becomes last_error.
func Defer(ctx context.Context, tx *engine.Tx, job *Job, cause screen.Text, runAfter time.Time) error {
	if err := holdsLease(ctx, tx, job); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, sqlDefer,
		runAfter.UnixMilli(), lastError("", cause.String()), tx.Now.UnixMilli(), job.ID,
	); err != nil {
		return errs.Wrap("defer job", err)
	}
	return nil
}

// LeaseOwners lists the owners of leases other than owner.
func LeaseOwners(ctx context.Context, tx *engine.Tx, owner string) ([]string, error) {
	rows, err := tx.QueryContext(ctx, sqlOwnersElsewhere, owner)
	if err != nil {
		return nil, errs.Wrap("lease owners", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			return nil, errs.Wrap("lease owners", err)
		}
		out = append(out, o)
	}
	return out, errs.Wrap("lease owners", rows.Err())
}

// ReleaseLeases ends every lease held by an owner other than owner that
// dead reports, as a failed attempt that runs again at once (or when it
// was due, if later); a job with no attempts left becomes failed. It
// returns how many jobs it released or failed.
func ReleaseLeases(ctx context.Context, tx *engine.Tx, owner string, dead func(owner string) bool) (int, error) {
	all, err := find(ctx, tx, sqlLeasedElsewhere, owner)
	if err != nil {
		return 0, err
	}
	jobs := all[:0]
	for _, j := range all {
		if dead(j.LeaseOwner) {
			jobs = append(jobs, j)
		}
	}
	for _, j := range jobs {
		msg := lastError(j.LastError, fmt.Sprintf("attempt %d: lease of %s released at start (the process ended)", j.Attempts, j.LeaseOwner))
		runAfter := j.RunAfter
		if runAfter.After(tx.Now) {
			runAfter = tx.Now
		}
		if err := retryOrFail(ctx, tx, j, msg, runAfter); err != nil {
			return 0, err
		}
	}
	return len(jobs), nil
}

// Cancel deletes the queued jobs of kind that were never tried, but the
// one with key keep (none when keep is ""); with futureOnly, only those
// whose run_after is still ahead. It returns how many it deleted.
func Cancel(ctx context.Context, tx *engine.Tx, kind, keep string, futureOnly bool) (int, error) {
	q, args := sqlCancel, []any{kind, keep}
	if futureOnly {
		q = sqlCancelFuture
		args = append(args, tx.Now.UnixMilli())
	}
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, errs.Wrap("cancel jobs", err)
	}
	n, _ := res.RowsAffected() // the driver always knows it
	return int(n), nil
}

// PurgeDone deletes the jobs done at or before cutoff and returns how many.
func PurgeDone(ctx context.Context, tx *engine.Tx, cutoff time.Time) (int, error) {
	res, err := tx.ExecContext(ctx, sqlPurgeDone, cutoff.UnixMilli())
	if err != nil {
		return 0, errs.Wrap("purge jobs", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// Get returns the job id. It returns NotFound (Field "id") for an unknown job.
func Get(ctx context.Context, tx *engine.Tx, id string) (*Job, error) {
	jobs, err := find(ctx, tx, sqlByID, id)
	if err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, errs.Errorf(errs.NotFound, "id", "no job has this id")
	}
	return jobs[0], nil
}

// List returns the jobs of kind (every kind when "") in state (every
// state when ""), oldest first.
func List(ctx context.Context, tx *engine.Tx, kind, state string) ([]*Job, error) {
	return find(ctx, tx, sqlList, kind, state)
}

// NextRun returns the earliest run_after of the queued jobs of kind, zero
// when none is queued.
func NextRun(ctx context.Context, tx *engine.Tx, kind string) (time.Time, error) {
	var next sql.NullInt64
	if err := tx.QueryRowContext(ctx, sqlNextRun, kind).Scan(&next); err != nil {
		return time.Time{}, errs.Wrap("next run", err)
	}
	return sqlval.Time(next), nil
}

// Pending reports whether a job of kind waits or runs.
func Pending(ctx context.Context, tx *engine.Tx, kind string) (bool, error) {
	var pending bool
	if err := tx.QueryRowContext(ctx, sqlPending, kind).Scan(&pending); err != nil {
		return false, errs.Wrap("pending jobs", err)
	}
	return pending, nil
}

// Counts counts the jobs by kind and state, sorted by both.
func Counts(ctx context.Context, tx *engine.Tx) ([]Count, error) {
	rows, err := tx.QueryContext(ctx, sqlCounts)
	if err != nil {
		return nil, errs.Wrap("job counts", err)
	}
	defer rows.Close()
	var list []Count
	for rows.Next() {
		var c Count
		if err := rows.Scan(&c.Kind, &c.State, &c.N); err != nil {
			return nil, errs.Wrap("job counts", err)
		}
		list = append(list, c)
	}
	if err := rows.Err(); err != nil {
		return nil, errs.Wrap("job counts", err)
	}
	return list, nil
}

// retryOrFail ends a failed attempt of j: with attempts left the job is
// queued again to run at runAfter, otherwise it becomes failed. msg is kept
// as last_error either way.
func retryOrFail(ctx context.Context, tx *engine.Tx, j *Job, msg string, runAfter time.Time) error {
	if j.Attempts >= j.MaxAttempts {
		return finish(ctx, tx, j, Failed, msg)
	}
	if _, err := tx.ExecContext(ctx, sqlRequeue, runAfter.UnixMilli(), msg, tx.Now.UnixMilli(), j.ID); err != nil {
		return errs.Wrap("requeue job", err)
	}
	return nil
}

// holdsLease returns Conflict (Field "job") unless job is still leased by
// the same owner on the same attempt.
func holdsLease(ctx context.Context, tx *engine.Tx, job *Job) error {
	var n int
	if err := tx.QueryRowContext(ctx, sqlHoldsLease, job.ID, job.LeaseOwner, job.Attempts).Scan(&n); err != nil {
		return errs.Wrap("job lease", err)
	}
	if n == 0 {
		return errs.Errorf(errs.Conflict, "job", "the lease on job %s (attempt %d) was lost", job.ID, job.Attempts)
	}
	return nil
}

// finish moves a job to a final state, done or failed.
func finish(ctx context.Context, tx *engine.Tx, job *Job, state, lastErr string) error {
	if _, err := tx.ExecContext(ctx, sqlFinish, state, lastErr, tx.Now.UnixMilli(), tx.Now.UnixMilli(), job.ID); err != nil {
		return errs.Wrap("finish job", err)
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

// find returns the jobs query (a selectJobs statement) matches.
func find(ctx context.Context, tx *engine.Tx, query string, args ...any) ([]*Job, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, errs.Wrap("find jobs", err)
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
			return nil, errs.Wrap("find jobs", err)
		}
		j.LeaseExpiry = sqlval.Time(lease)
		j.FinishedAt = sqlval.Time(done)
		j.RunAfter = time.UnixMilli(runAfter).UTC()
		j.CreatedAt = time.UnixMilli(created).UTC()
		j.UpdatedAt = time.UnixMilli(updated).UTC()
		out = append(out, &j)
	}
	return out, errs.Wrap("find jobs", rows.Err())
}
