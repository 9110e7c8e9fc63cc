package workers

import (
	"context"
	"log/slog"
	"time"

	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/storage"
)

// maintenanceAttempts limits the tries of one maintenance run; the next
// review_at brings a new one anyway.
const maintenanceAttempts = 3

// Scheduler places maintenance runs at review_at, local time.
type Scheduler struct {
	// At is review_at: a time of day, or Off.
	At options.ReviewAt
	// Location is the time zone At is read in; nil means UTC.
	Location *time.Location
}

// Next returns the first review_at strictly after now, in s.Location, and
// false when review_at is off. On a night when a daylight-saving change skips
// review_at (02:30 on a spring-forward night), the run comes at the moment
// of the change, as cron runs a job of a skipped hour; on a night that
// repeats it, the run comes once.
func (s Scheduler) Next(now time.Time) (time.Time, bool) {
	if s.At.Off {
		return time.Time{}, false
	}
	loc := s.Location
	if loc == nil {
		loc = time.UTC
	}
	l := now.In(loc)
	for d := 0; ; d++ {
		t := s.on(l.Year(), l.Month(), l.Day()+d, loc)
		if t.After(now) {
			return t, true
		}
	}
}

// on returns review_at on one day. time.Date gives a time in one of the two
// zones around a skipped wall time; the change itself is the slot then.
func (s Scheduler) on(year int, month time.Month, day int, loc *time.Location) time.Time {
	t := time.Date(year, month, day, s.At.Hour, s.At.Minute, 0, 0, loc)
	lt := t.In(loc)
	got, want := lt.Hour()*60+lt.Minute(), s.At.Hour*60+s.At.Minute
	if got == want {
		return t
	}
	start, end := t.ZoneBounds()
	if got < want && !end.IsZero() {
		return end
	}
	if got > want && !start.IsZero() {
		return start
	}
	return t
}

// SlotKey is the job key of the maintenance run at t: one job per instant.
func SlotKey(t time.Time) string {
	return storage.KindMaintenance + "@" + t.UTC().Format(time.RFC3339)
}

// Ensure makes sure the maintenance run for the next review_at after now is
// queued (once: the job's key is its slot) and drops queued runs for other
// future slots, left by an earlier review_at. A run that is already due (it
// was missed while the process was down) stays and runs once. With review_at
// off it drops every queued run.
func (s Scheduler) Ensure(ctx context.Context, db *storage.DB, now time.Time) error {
	next, ok := s.Next(now)
	if !ok {
		_, err := db.CancelJobs(ctx, storage.KindMaintenance, "", false)
		return err
	}
	key := SlotKey(next)
	if _, _, err := db.EnqueueJob(ctx, storage.NewJob{
		Kind: storage.KindMaintenance, Key: key, RunAfter: next, MaxAttempts: maintenanceAttempts,
	}); err != nil {
		return err
	}
	_, err := db.CancelJobs(ctx, storage.KindMaintenance, key, true)
	return err
}

// maxMergeSteps bounds the full-text merge of one maintenance run: at
// storage's 200 pages a step, a merge of a million records' index.
const maxMergeSteps = 10000

// Maintenance is the handler of maintenance jobs: candidate expiry
// (candidate_expiry_days; 0 turns it off), observation expiry
// (capture_retention_days), purge after retention_deleted_days and the
// audit's after audit_retention_days (0 keeps it), written with the job's
// completion together with an
// audit row of the counts (storage.JobTx.Maintain). First it merges the
// full-text index's segments into one, in short steps of their own between
// other writes (storage.DB.MergeIndex); a merge that fails is logged and
// left to the next night, as the index is whole either way.
func Maintenance(db *storage.DB, o options.Options, log *slog.Logger) Handler {
	m := storage.Maintenance{
		CandidateExpiry: time.Duration(o.CandidateExpiryDays) * 24 * time.Hour,
		Retention:       time.Duration(o.RetentionDeletedDays) * 24 * time.Hour,
		// Observations nobody used expire (docs/capture.md).
		CaptureRetention: time.Duration(o.CaptureRetentionDays) * 24 * time.Hour,
		AuditRetention:   time.Duration(o.AuditRetentionDays) * 24 * time.Hour,
	}
	return func(ctx context.Context, job *storage.Job) (Effects, error) {
		if steps, err := db.MergeIndexFully(ctx, maxMergeSteps); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			log.Warn("maintenance: merging the full-text index", "steps", steps, "err", err)
		}
		return func(ctx context.Context, tx *storage.JobTx) error {
			_, err := tx.Maintain(ctx, m)
			return err
		}, nil
	}
}
