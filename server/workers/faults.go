package workers

import (
	"context"
	"time"

	"github.com/hearth-memory/hearth/storage"
)

// maxBackoff bounds the runner's wait while the store refuses writes.
const maxBackoff = time.Minute

// refused reports whether err is the store refusing writes: the disk is
// full or the file is damaged.
func refused(err error) bool {
	switch storage.ErrorCode(err) {
	case storage.Full, storage.ReadOnly:
		return true
	}
	return false
}

// queueError logs a failure of the queue itself. A store that refuses
// writes (a full disk, a damaged file) is logged once when the runner
// starts to wait for it, not at every poll: status and /health say it.
func (w *Workers) queueError(ctx context.Context, err error) {
	switch {
	case refused(err):
		if w.backoff == 0 {
			w.log.WarnContext(ctx, "job queue waits: the store refuses writes", "err", err)
		}
	default:
		w.log.ErrorContext(ctx, "job queue", "err", err)
	}
}

// nextPoll is how long the runner waits after a round that ended with
// err: the poll interval, or while the store refuses writes a wait that
// doubles from it to maxBackoff, so a full disk or a damaged file meets
// no retry storm.
func (w *Workers) nextPoll(err error) time.Duration {
	if refused(err) {
		w.backoff = min(max(2*w.backoff, w.poll), max(maxBackoff, w.poll))
		return w.backoff
	}
	if w.backoff != 0 && err == nil {
		w.log.Info("job queue resumes")
	}
	w.backoff = 0
	return w.poll
}

// checkIntegrity checks the database file after the nightly maintenance
// (issue #21): storage.DB.CheckIntegrity repairs the full-text index or
// makes the store read-only, and audits the outcome.
func (w *Workers) checkIntegrity(ctx context.Context) {
	chk, err := w.db.CheckIntegrity(ctx)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			w.log.ErrorContext(ctx, "integrity check", "err", err)
		}
	case chk.Damage != nil:
		w.log.ErrorContext(ctx, "database damaged: serving read-only", "problem", chk.Damage.Message(),
			"findings", chk.Damage.Problems)
	case chk.Repaired != "":
		w.log.WarnContext(ctx, "integrity check repaired the database", "repair", chk.Repaired, "ms", chk.Duration.Milliseconds())
	default:
		w.log.InfoContext(ctx, "integrity check", "result", "ok", "ms", chk.Duration.Milliseconds())
	}
}
