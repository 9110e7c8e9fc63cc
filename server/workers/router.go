package workers

import (
	"context"
	"log/slog"
	"time"

	"github.com/hearth-memory/hearth/server/models"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/storage"
)

// NewRouter returns the router of the model servers opts configures
// (docs/design.md R-M1..R-M7); with none configured its calls fail and the
// model jobs wait. Probes are due every 15 s less the runner's poll, so
// that with the poll's granularity no server goes longer than 15 s
// unprobed (R-M3). The router reads now (nil: the wall clock), and keeps
// the daily budget's usage in db, from which it reads today's usage and
// the pause before the workers start (docs/operations.md, "Model budget").
func NewRouter(ctx context.Context, db *storage.DB, opts options.Options, now func() time.Time, log *slog.Logger) (*models.Router, error) {
	cfg := models.FromOptions(opts)
	cfg.ProbeEvery = MaxProbeEvery - DefaultPoll
	cfg.Now = now
	cfg.Ledger = ledger{db}
	cfg.OnLedgerError = func(err error) { log.Error("model budget: a call's usage was not stored", "err", err) }
	r, err := models.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := r.Restore(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// ledger keeps the model budget in the store.
type ledger struct{ db *storage.DB }

func (l ledger) Load(ctx context.Context, day string) (map[string]models.Usage, bool, error) {
	used, paused, err := l.db.ModelBudget(ctx, day)
	if err != nil {
		return nil, false, err
	}
	out := make(map[string]models.Usage, len(used))
	for s, u := range used {
		out[s] = models.Usage(u)
	}
	return out, paused, nil
}

func (l ledger) Add(ctx context.Context, day, server string, u models.Usage) error {
	return l.db.AddModelUsage(ctx, day, server, storage.ModelUsage(u))
}
