package storage

import (
	"context"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/anchors"
	"github.com/hearth-memory/hearth/storage/internal/jobq"
)

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
// listing at most limit flagged records (anchors.Flagged).
func (db *DB) AnchorStatus(ctx context.Context, limit int) (*AnchorStatus, error) {
	var st AnchorStatus
	err := db.read(ctx, "anchor status", func(tx *txn) (err error) {
		if st.LastSweep, err = jobq.LastSweep(ctx, tx); err != nil {
			return err
		}
		if st.NextSweep, err = jobq.NextRun(ctx, tx, KindAnchorSweep); err != nil {
			return err
		}
		st.Flagged, st.FlaggedTotal, err = anchors.Flagged(ctx, tx, limit)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &st, nil
}
