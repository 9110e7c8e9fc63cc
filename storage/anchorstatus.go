package storage

import (
	"context"
	"database/sql"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/jobq"
)

// FlaggedRecord is a live record with an unavailable anchor, as
// memory_status and the page list it.
type FlaggedRecord struct {
	ID, Namespace, Type, Title, Status string
	Flag                               AnchorFlag
	// Detail and CheckedBy are those of the check that flagged the
	// record's first unavailable anchor.
	Detail, CheckedBy string
}

// AnchorStatus is what memory_status reports about anchors: the latest
// sweep (nil when none ran), when the next scheduled one is due (zero when
// none is queued), and the active and candidate records with an
// unavailable anchor: the latest flagged first, at most the limit asked,
// and how many there are in all.
type AnchorStatus struct {
	LastSweep    *Sweep
	NextSweep    time.Time
	Flagged      []FlaggedRecord
	FlaggedTotal int
}

// AnchorStatus reads the anchor report of memory_status from one snapshot,
// listing at most limit flagged records.
func (db *DB) AnchorStatus(ctx context.Context, limit int) (*AnchorStatus, error) {
	var st *AnchorStatus
	err := db.read(ctx, "anchor status", func(tx *txn) (err error) {
		st, err = anchorStatusTx(ctx, tx, limit)
		return err
	})
	return st, err
}

func anchorStatusTx(ctx context.Context, tx *txn, limit int) (*AnchorStatus, error) {
	var st AnchorStatus
	var err error
	if st.LastSweep, err = jobq.LastSweep(ctx, tx); err != nil {
		return nil, err
	}
	if st.NextSweep, err = jobq.NextRun(ctx, tx, KindAnchorSweep); err != nil {
		return nil, err
	}

	// Per record: its first unavailable anchor (by position), how many,
	// and when the latest of them became unavailable, which orders the list.
	// The few unavailable anchors drive both queries: the unary + on
	// r.status keeps the planner off records_status_timeline_idx
	// (migration 0072), which would read every live record instead.
	const flagged = `
		SELECT record_id, MIN(position) AS first, COUNT(*) AS n, MAX(COALESCE(checked_at, 0)) AS latest
		FROM anchors WHERE state = 'unavailable' GROUP BY record_id`
	if err := tx.QueryRowContext(ctx, `
		SELECT COUNT(*) FROM (`+flagged+`) AS u
		JOIN records AS r ON r.id = u.record_id AND r.status || '' IN ('active', 'candidate')`,
	).Scan(&st.FlaggedTotal); err != nil {
		return nil, classify("anchor status", err)
	}
	rows, err := tx.QueryContext(ctx, `
		SELECT r.id, r.namespace, r.type, r.title, r.status, a.anchor, a.checked_at, u.n, a.detail, a.checked_by
		FROM (`+flagged+`) AS u
		JOIN records AS r ON r.id = u.record_id AND r.status || '' IN ('active', 'candidate')
		JOIN anchors AS a ON a.record_id = u.record_id AND a.position = u.first
		ORDER BY u.latest DESC, r.id DESC
		LIMIT +?`, limit)
	if err != nil {
		return nil, classify("anchor status", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			f     FlaggedRecord
			since sql.NullInt64
		)
		if err := rows.Scan(&f.ID, &f.Namespace, &f.Type, &f.Title, &f.Status, &f.Flag.Anchor, &since, &f.Flag.Count,
			&f.Detail, &f.CheckedBy); err != nil {
			return nil, classify("anchor status", err)
		}
		f.Flag.Since = fromMS(since)
		st.Flagged = append(st.Flagged, f)
	}
	if err := rows.Err(); err != nil {
		return nil, classify("anchor status", err)
	}
	return &st, nil
}
