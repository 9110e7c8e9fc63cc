// Package modelbudget is what the model servers spent, below the record
// domain (docs/design.md, "Storage layout"; issue #39): each server's calls
// and tokens per budget day, kept a week, and whether an admin paused model
// calls. It works inside the engine's transactions (*engine.Tx); the audit
// row a pause or resume writes is the storage package's, in the same
// transaction. Its refusals are *errs.Error.
package modelbudget

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/engine"
	"github.com/hearth-memory/hearth/storage/internal/errs"
)

// Usage is what one model server spent on one budget day: calls, and the
// tokens of their prompts and replies; Estimated counts the calls whose
// tokens were estimated.
type Usage struct {
	Calls, PromptTokens, CompletionTokens, Estimated int64
}

// keepDays is how many days of model usage are kept.
const keepDays = 7

// Check returns Invalid (Field "day") unless both day and server are given.
func Check(day, server string) error {
	if day == "" || server == "" {
		return errs.Errorf(errs.Invalid, "day", "day and server are required")
	}
	return nil
}

// Add adds u to server's usage of day (a local date, YYYY-MM-DD), both
// checked by Check, and drops days older than a week before tx.Now.
func Add(ctx context.Context, tx *engine.Tx, day, server string, u Usage) error {
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO model_usage (day, server, calls, prompt_tokens, completion_tokens, estimated) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (day, server) DO UPDATE SET calls = model_usage.calls + excluded.calls,
			prompt_tokens = model_usage.prompt_tokens + excluded.prompt_tokens,
			completion_tokens = model_usage.completion_tokens + excluded.completion_tokens,
			estimated = model_usage.estimated + excluded.estimated`,
		day, server, u.Calls, u.PromptTokens, u.CompletionTokens, u.Estimated); err != nil {
		return errs.Wrap("add model usage", err)
	}
	old := tx.Now.AddDate(0, 0, -keepDays).UTC().Format(time.DateOnly)
	_, err := tx.ExecContext(ctx, `DELETE FROM model_usage WHERE day < ?`, old)
	return errs.Wrap("add model usage", err)
}

// Day returns the usage of day by server, and whether model calls are
// paused.
func Day(ctx context.Context, tx *engine.Tx, day string) (map[string]Usage, bool, error) {
	out := map[string]Usage{}
	rows, err := tx.QueryContext(ctx, `SELECT server, calls, prompt_tokens, completion_tokens, estimated FROM model_usage WHERE day = ?`, day)
	if err != nil {
		return nil, false, errs.Wrap("model budget", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			s string
			u Usage
		)
		if err := rows.Scan(&s, &u.Calls, &u.PromptTokens, &u.CompletionTokens, &u.Estimated); err != nil {
			return nil, false, errs.Wrap("model budget", err)
		}
		out[s] = u
	}
	if err := rows.Err(); err != nil {
		return nil, false, errs.Wrap("model budget", err)
	}
	var at int64
	switch err := tx.QueryRowContext(ctx, `SELECT paused_at FROM model_pause WHERE id = 1`).Scan(&at); {
	case errors.Is(err, sql.ErrNoRows):
		return out, false, nil
	case err != nil:
		return nil, false, errs.Wrap("model budget", err)
	}
	return out, true, nil
}

// Pause keeps that model calls are paused from tx.Now (a pause already
// kept stays as it was).
func Pause(ctx context.Context, tx *engine.Tx) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO model_pause (id, paused_at) VALUES (1, ?) ON CONFLICT (id) DO NOTHING`, tx.Now.UnixMilli())
	return errs.Wrap("pause models", err)
}

// Resume keeps that model calls are no longer paused, and forgets day's
// usage, so that the day's budget starts over.
func Resume(ctx context.Context, tx *engine.Tx, day string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM model_pause`); err != nil {
		return errs.Wrap("resume models", err)
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM model_usage WHERE day = ?`, day)
	return errs.Wrap("resume models", err)
}
