package storage

import (
	"context"
	"database/sql"
	"errors"
	"time"

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

// ModelUsage is what one model server spent on one budget day: calls, and
// the tokens of their prompts and replies; Estimated counts the calls
// whose tokens were estimated.
type ModelUsage struct {
	Calls, PromptTokens, CompletionTokens, Estimated int64
}

// modelUsageDays is how many days of model usage are kept.
const modelUsageDays = 7

const (
	opAddModelUsage = "add model usage"
	opModelBudget   = "model budget"
)

// AddModelUsage adds u to server's usage of day (a local date,
// YYYY-MM-DD), and drops days older than a week before it.
func (db *DB) AddModelUsage(ctx context.Context, day, server string, u ModelUsage) error {
	if day == "" || server == "" {
		return errorf(Invalid, "day", "day and server are required")
	}
	return db.write(ctx, opAddModelUsage, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO model_usage (day, server, calls, prompt_tokens, completion_tokens, estimated) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (day, server) DO UPDATE SET calls = model_usage.calls + excluded.calls,
				prompt_tokens = model_usage.prompt_tokens + excluded.prompt_tokens,
				completion_tokens = model_usage.completion_tokens + excluded.completion_tokens,
				estimated = model_usage.estimated + excluded.estimated`,
			day, server, u.Calls, u.PromptTokens, u.CompletionTokens, u.Estimated); err != nil {
			return classify("add model usage", err)
		}
		old := tx.Now.AddDate(0, 0, -modelUsageDays).UTC().Format(time.DateOnly)
		_, err := tx.ExecContext(ctx, `DELETE FROM model_usage WHERE day < ?`, old)
		return classify("add model usage", err)
	})
}

// ModelBudget returns the usage of day by server, and whether model calls
// are paused.
func (db *DB) ModelBudget(ctx context.Context, day string) (map[string]ModelUsage, bool, error) {
	out := map[string]ModelUsage{}
	var paused bool
	err := db.read(ctx, "model budget", func(tx *txn) error {
		rows, err := tx.QueryContext(ctx, `SELECT server, calls, prompt_tokens, completion_tokens, estimated FROM model_usage WHERE day = ?`, day)
		if err != nil {
			return classify("model budget", err)
		}
		defer rows.Close()
		for rows.Next() {
			var (
				s string
				u ModelUsage
			)
			if err := rows.Scan(&s, &u.Calls, &u.PromptTokens, &u.CompletionTokens, &u.Estimated); err != nil {
				return classify("model budget", err)
			}
			out[s] = u
		}
		if err := rows.Err(); err != nil {
			return classify("model budget", err)
		}
		var at int64
		switch err := tx.QueryRowContext(ctx, `SELECT paused_at FROM model_pause WHERE id = 1`).Scan(&at); {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return classify("model budget", err)
		default:
			paused = true
		}
		return nil
	})
	return out, paused, err
}

// PauseModels keeps that model calls are paused, or no longer (resume),
// with an audit row by client. On resume it also forgets day's usage, so
// that the day's budget starts over; detail says what was spent.
func (db *DB) PauseModels(ctx context.Context, paused bool, day, client string, detail screen.Text) error {
	return db.write(ctx, opModelBudget, func(tx *txn) error {
		action := ActionModelPause
		if paused {
			if _, err := tx.ExecContext(ctx, `INSERT INTO model_pause (id, paused_at) VALUES (1, ?) ON CONFLICT (id) DO NOTHING`, tx.Now.UnixMilli()); err != nil {
				return classify("pause models", err)
			}
		} else {
			action = ActionModelResume
			if _, err := tx.ExecContext(ctx, `DELETE FROM model_pause`); err != nil {
				return classify("resume models", err)
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM model_usage WHERE day = ?`, day); err != nil {
				return classify("resume models", err)
			}
		}
		return insertAuditTx(ctx, tx, AuditEntry{Client: client, Action: action, Detail: detail})
	})
}
