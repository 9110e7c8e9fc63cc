package jobq

import (
	"context"
	"database/sql"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/engine"
	"github.com/hearth-memory/hearth/storage/internal/errs"
)

// keptSweeps is how many sweeps anchor_sweeps keeps.
const keptSweeps = 100

// Sweep is a recorded anchor sweep (KindAnchorSweep, or one an admin
// asked for): when, who asked, whether Home Assistant was there and
// answered, and the counts. Checked counts the entity anchors of active
// and candidate records that were compared with Home Assistant's states,
// Changed those whose state changed; Available, Unavailable and Unknown
// count every such anchor by its state after the sweep.
type Sweep struct {
	At            time.Time
	RequestedBy   string
	HomeAssistant bool
	Unreachable   bool
	Detail        string
	Checked       int
	Changed       int
	Available     int
	Unavailable   int
	Unknown       int
}

// RecordSweep appends s, at tx.Now, to the log of sweeps, which keeps
// the latest 100.
func RecordSweep(ctx context.Context, tx *engine.Tx, s *Sweep) error {
	if _, err := tx.ExecContext(ctx, sqlInsertSweep,
		tx.Now.UnixMilli(), s.RequestedBy, s.HomeAssistant, s.Unreachable, s.Detail,
		s.Checked, s.Changed, s.Available, s.Unavailable, s.Unknown,
	); err != nil {
		return errs.Wrap("sweep", err)
	}
	if _, err := tx.ExecContext(ctx, sqlTrimSweeps, keptSweeps); err != nil {
		return errs.Wrap("sweep", err)
	}
	return nil
}

// LastSweep returns the latest recorded sweep, or nil when none ran.
func LastSweep(ctx context.Context, tx *engine.Tx) (*Sweep, error) {
	var (
		s  Sweep
		at int64
	)
	err := tx.QueryRowContext(ctx, sqlLastSweep).Scan(&at, &s.RequestedBy, &s.HomeAssistant, &s.Unreachable,
		&s.Detail, &s.Checked, &s.Changed, &s.Available, &s.Unavailable, &s.Unknown)
	switch {
	case err == sql.ErrNoRows:
		return nil, nil
	case err != nil:
		return nil, errs.Wrap("last sweep", err)
	}
	s.At = time.UnixMilli(at).UTC()
	return &s, nil
}
