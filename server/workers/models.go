package workers

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/hearth-memory/hearth/server/retrieval"
	"github.com/hearth-memory/hearth/server/scope"
	"github.com/hearth-memory/hearth/storage"
)

// MaxProbeEvery is the longest the runner lets pass between two calls of
// the router's Poll (docs/design.md R-M3: probes at least every 15 s).
const MaxProbeEvery = 15 * time.Second

// handleModels registers the model jobs when cfg.Models has a server:
// extraction and review run only while a server is live (the last probe
// answered, or none was made yet) with budget left and calls not paused
// (models.Router.Available), and each maintenance run queues a review for
// its slot in its completion transaction. Without a server the model jobs
// have no handler and wait, queued.
func (w *Workers) handleModels(cfg Config) error {
	r := cfg.Models
	if r == nil || !r.Configured() {
		return nil
	}
	if cfg.Check == nil {
		return errors.New("workers: Check is required with Models")
	}
	w.models = r
	live := r.Available
	w.HandleWhen(storage.KindExtraction, live, Extract(r, cfg.Check, cfg.DB))
	w.HandleWhen(storage.KindReview, live, Review(r, cfg.DB, scope.New(cfg.Options), retrieval.New(cfg.DB)))
	w.Handle(storage.KindMaintenance, queueReview(Maintenance(cfg.DB, cfg.Options, w.log)))
	return nil
}

// HandleWhen registers h for jobs of kind, as Handle does, leased only
// while ready returns true: until then they wait, queued, and no attempt is
// spent. Call it before Start.
func (w *Workers) HandleWhen(kind string, ready func() bool, h Handler) {
	w.Handle(kind, h)
	w.ready[kind] = ready
}

// readyKinds returns the kinds with a handler whose gate is open.
func (w *Workers) readyKinds() []string {
	out := make([]string, 0, len(w.kinds))
	for _, k := range w.kinds {
		if ready := w.ready[k]; ready == nil || ready() {
			out = append(out, k)
		}
	}
	return out
}

// ReviewKey is the job key of the review that follows the maintenance job
// m: one review per maintenance slot.
func ReviewKey(m *storage.Job) string {
	slot := strings.TrimPrefix(m.Key, storage.KindMaintenance+"@")
	if slot == "" {
		slot = m.ID
	}
	return storage.KindReview + "@" + slot
}

// queueReview wraps the maintenance handler: the run also queues the
// night's review, in the same transaction.
func queueReview(h Handler) Handler {
	return func(ctx context.Context, job *storage.Job) (Effects, error) {
		effects, err := h(ctx, job)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, tx *storage.JobTx) error {
			if effects != nil {
				if err := effects(ctx, tx); err != nil {
					return err
				}
			}
			_, _, err := tx.EnqueueJob(ctx, storage.NewJob{Kind: storage.KindReview, Key: ReviewKey(job), MaxAttempts: reviewAttempts})
			return err
		}, nil
	}
}

// probe starts the prober when a model server is configured and returns
// the function that waits for it to end (after ctx). The prober calls the
// router's Poll at once and then every min(Poll, MaxProbeEvery), on its own
// goroutine: a model call in flight on the runner never delays a probe, and
// no call ever probes (docs/design.md R-M3). The router decides which servers are
// due.
func (w *Workers) probe(ctx context.Context) (wait func()) {
	if w.models == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(min(w.poll, MaxProbeEvery))
		defer t.Stop()
		for {
			w.models.Poll(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { <-done }
}
