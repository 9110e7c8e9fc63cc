package anchors

import (
	"context"
	"database/sql"

	"github.com/hearth-memory/hearth/storage/internal/engine"
	"github.com/hearth-memory/hearth/storage/internal/errs"
	"github.com/hearth-memory/hearth/storage/internal/sqlval"
)

// FlaggedRecord is a live record with an unavailable anchor, as
// memory_status and the page list it.
type FlaggedRecord struct {
	ID, Namespace, Type, Title, Status string
	Flag                               Flag
	// Detail and CheckedBy are those of the check that flagged the
	// record's first unavailable anchor.
	Detail, CheckedBy string
}

// Flagged returns the active and candidate records with an unavailable
// anchor, the latest flagged first, at most limit of them, and how many
// there are in all.
func Flagged(ctx context.Context, tx *engine.Tx, limit int) ([]FlaggedRecord, int, error) {
	var total int
	if err := tx.QueryRowContext(ctx, sqlFlaggedCount).Scan(&total); err != nil {
		return nil, 0, errs.Wrap("anchor status", err)
	}
	rows, err := tx.QueryContext(ctx, sqlFlagged, limit)
	if err != nil {
		return nil, 0, errs.Wrap("anchor status", err)
	}
	defer rows.Close()
	var list []FlaggedRecord
	for rows.Next() {
		var (
			f     FlaggedRecord
			since sql.NullInt64
		)
		if err := rows.Scan(&f.ID, &f.Namespace, &f.Type, &f.Title, &f.Status, &f.Flag.Anchor, &since, &f.Flag.Count,
			&f.Detail, &f.CheckedBy); err != nil {
			return nil, 0, errs.Wrap("anchor status", err)
		}
		f.Flag.Since = sqlval.Time(since)
		list = append(list, f)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, errs.Wrap("anchor status", err)
	}
	return list, total, nil
}
