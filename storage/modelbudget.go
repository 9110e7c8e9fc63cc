package storage

import (
	"context"

	"github.com/hearth-memory/hearth/storage/internal/modelbudget"
	"github.com/hearth-memory/hearth/storage/screen"
)

// Audit actions of the model budget (issue #39); their strings never change.
const (
	// ActionModelPause: an admin paused model calls (memory_model_pause).
	ActionModelPause Action = "model.pause"
	// ActionModelResume: an admin resumed model calls and started the day's
	// budget over (memory_model_resume); the detail says what was spent.
	ActionModelResume Action = "model.resume"
)

// ModelUsage is what one model server spent on one budget day
// (modelbudget.Usage).
type ModelUsage = modelbudget.Usage

const (
	opAddModelUsage = "add model usage"
	opModelBudget   = "model budget"
)

// AddModelUsage adds u to server's usage of day (a local date,
// YYYY-MM-DD), and drops days older than a week before it.
func (db *DB) AddModelUsage(ctx context.Context, day, server string, u ModelUsage) error {
	if err := modelbudget.Check(day, server); err != nil {
		return lift(err)
	}
	return db.writeGrouped(ctx, opAddModelUsage, func(tx *txn) error {
		return lift(modelbudget.Add(ctx, tx, day, server, u))
	})
}

// ModelBudget returns the usage of day by server, and whether model calls
// are paused.
func (db *DB) ModelBudget(ctx context.Context, day string) (map[string]ModelUsage, bool, error) {
	out := map[string]ModelUsage{}
	var paused bool
	err := db.read(ctx, "model budget", func(tx *txn) error {
		usage, p, err := modelbudget.Day(ctx, tx, day)
		if err != nil {
			return lift(err)
		}
		out, paused = usage, p
		return nil
	})
	return out, paused, err
}

// PauseModels keeps that model calls are paused, or no longer (resume),
// with an audit row by client. On resume it also forgets day's usage, so
// that the day's budget starts over; detail says what was spent.
func (db *DB) PauseModels(ctx context.Context, paused bool, day, client string, detail screen.Text) error {
	return db.writeGrouped(ctx, opModelBudget, func(tx *txn) error {
		action, err := ActionModelPause, error(nil)
		if paused {
			err = modelbudget.Pause(ctx, tx)
		} else {
			action, err = ActionModelResume, modelbudget.Resume(ctx, tx, day)
		}
		if err != nil {
			return lift(err)
		}
		return insertAuditTx(ctx, tx, AuditEntry{Client: client, Action: action, Detail: detail})
	})
}
