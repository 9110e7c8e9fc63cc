package workers

import (
	"context"
	"time"

	"github.com/hearth-memory/hearth/server/sweep"
	"github.com/hearth-memory/hearth/storage"
)

// sweepAttempts limits the tries of one scheduled sweep. Home Assistant
// being unreachable is not a failure (the sweep records it); only the
// store's own errors retry, with Backoff (at most an hour apart), for days
// before the job gives up: the next sweep is queued only when one
// completes, so a failed one would end the schedule until a restart.
const sweepAttempts = 100

// SweepSchedule keeps one entity sweep queued every anchor_sweep_hours
// (docs/design.md R-H1), as Scheduler keeps maintenance at review_at. The job is
// durable: a sweep that fell due while the process was down runs once at
// the next start.
type SweepSchedule struct {
	// Every is anchor_sweep_hours.
	Every time.Duration
	// HomeAssistant says whether the sweeps read Home Assistant. A sweep
	// recorded the other way (before SUPERVISOR_TOKEN came or went) does
	// not count as the latest: the next one is due at once.
	HomeAssistant bool
}

// SweepKey is the job key of the sweep due at t: one job per instant.
func SweepKey(t time.Time) string {
	return storage.KindAnchorSweep + "@" + t.UTC().Format(time.RFC3339Nano)
}

// Next is when the sweep after the latest one (last; zero when none ever
// ran) is due: Every after it, or now when that has passed already.
func (s SweepSchedule) Next(last, now time.Time) time.Time {
	if last.IsZero() {
		return now
	}
	next := last.Add(s.Every)
	if next.Before(now) {
		return now
	}
	return next
}

// Ensure queues the next sweep, due Every after the latest recorded one (at
// once when none ran, when the latest did not read Home Assistant as these
// sweeps do, or when it is overdue: a sweep missed while the process was
// down), and drops queued sweeps for other times, left by an earlier
// anchor_sweep_hours.
func (s SweepSchedule) Ensure(ctx context.Context, db *storage.DB, now time.Time) error {
	last, err := db.LastSweep(ctx)
	if err != nil {
		return err
	}
	var at time.Time
	if last != nil && last.HomeAssistant == s.HomeAssistant {
		at = last.At
	}
	next := s.Next(at, now)
	key := SweepKey(next)
	if _, _, err := db.EnqueueJob(ctx, storage.NewJob{
		Kind: storage.KindAnchorSweep, Key: key, RunAfter: next, MaxAttempts: sweepAttempts,
	}); err != nil {
		return err
	}
	_, err = db.CancelJobs(ctx, storage.KindAnchorSweep, key, false)
	return err
}

// AnchorSweep is the handler of anchor-sweep jobs: it reads Home
// Assistant's states (outside any transaction) and records the sweep with
// the job's completion, together with the next sweep, Every after this one.
//
// A job whose sweep a scheduled sweep recorded since it fell due has been
// done already: it reads nothing and records nothing, and only makes sure
// the sweep after that one is queued. Two front ends of one database that
// start together each queue a sweep due at their start, under keys of
// their own; the two take turns (docs/postgres.md, "Nightly work"), and
// the second finds the first's sweep instead of sweeping again and then
// keeping a second schedule going.
func AnchorSweep(db *storage.DB, sw *sweep.Sweeper, s SweepSchedule) Handler {
	return func(ctx context.Context, job *storage.Job) (Effects, error) {
		last, err := db.LastSweep(ctx)
		if err != nil {
			return nil, err
		}
		if last != nil && last.RequestedBy == storage.SystemClient && last.HomeAssistant == s.HomeAssistant &&
			!last.At.Before(job.RunAfter) {
			return enqueueSweep(last.At.Add(s.Every)), nil
		}
		run, err := sw.Check(ctx, storage.SystemClient)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, tx *storage.JobTx) error {
			if _, err := tx.Sweep(ctx, run); err != nil {
				return err
			}
			return enqueueSweep(tx.Now().Add(s.Every))(ctx, tx)
		}, nil
	}
}

// enqueueSweep queues the sweep due at next, once: its key is the time.
func enqueueSweep(next time.Time) Effects {
	return func(ctx context.Context, tx *storage.JobTx) error {
		_, _, err := tx.EnqueueJob(ctx, storage.NewJob{
			Kind: storage.KindAnchorSweep, Key: SweepKey(next), RunAfter: next, MaxAttempts: sweepAttempts,
		})
		return err
	}
}
