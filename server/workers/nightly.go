package workers

import (
	"context"
	"slices"

	"github.com/hearth-memory/hearth/storage"
)

// nightly are the job kinds that run on one front end of a database at a
// time (docs/postgres.md, "Nightly work"): the maintenance run, the review
// it queues and the anchor sweep. A job of these is leased only under the
// store's exclusive run of its kind (storage.DB.RunExclusive), held until
// the job is completed or failed: a lease that ran out while the run goes
// on cannot be taken by another front end, which finds the kind's lock
// held and skips it until the run ended, by when the job is done.
var nightly = []string{storage.KindAnchorSweep, storage.KindMaintenance, storage.KindReview}

// exclusiveName is the name of the exclusive run of a nightly kind.
func exclusiveName(kind string) string { return "job:" + kind }

// splitNightly returns the nightly kinds of kinds, and the rest.
func splitNightly(kinds []string) (excl, rest []string) {
	for _, k := range kinds {
		if slices.Contains(nightly, k) {
			excl = append(excl, k)
		} else {
			rest = append(rest, k)
		}
	}
	return excl, rest
}

// runNightly leases a due job of kind and runs it, holding the kind's
// exclusive run throughout, and reports whether it ran one. When another
// front end (or another runner of this process) holds it, it runs nothing
// and says so at debug level: that run completes the job, or, when its
// process dies, its lease runs out and the job is leased again then.
func (w *Workers) runNightly(ctx context.Context, kind string) (ran bool, err error) {
	if due, err := w.db.JobsDue(ctx, []string{kind}); err != nil || !due {
		return false, err
	}
	got, err := w.db.RunExclusive(ctx, exclusiveName(kind), func(ctx context.Context) error {
		ran, err = w.leaseAndRun(ctx, []string{kind})
		return err
	})
	if !got && err == nil {
		w.log.DebugContext(ctx, "a job of this kind runs elsewhere: skipped", "kind", kind)
	}
	return ran, err
}
