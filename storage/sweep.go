package storage

import (
	"context"

	"github.com/hearth-memory/hearth/storage/internal/anchors"
	"github.com/hearth-memory/hearth/storage/internal/jobq"
	"github.com/hearth-memory/hearth/storage/screen"
)

// SweepChecker is the checked_by of anchors whose state a sweep set.
const SweepChecker = "sweep"

// EntityCheck is what a sweep found for one entity: State is
// AnchorAvailable or AnchorUnavailable, Detail says why, briefly.
type EntityCheck struct {
	State  string
	Detail string
}

// SweepRun is one sweep to record. Check, when set, says what Home
// Assistant's states show for an entity id; it is nil when nothing could be
// checked: without Home Assistant (HomeAssistant false) or when it did not
// answer (Unreachable), and then no anchor changes.
type SweepRun struct {
	// Client asked for the sweep: a client's name, or SystemClient for the
	// schedule. Audit rows of the changes carry it.
	Client        string
	HomeAssistant bool
	Unreachable   bool
	// Detail says what happened when nothing was checked ("Home Assistant
	// answered 502"); it is kept with the sweep.
	Detail screen.Text
	Check  func(entityID string) EntityCheck
}

// Sweep is a recorded sweep (package jobq keeps their log).
type Sweep = jobq.Sweep

func (r *SweepRun) validate() error {
	switch {
	case r.Client == "":
		return errorf(Invalid, "client", "is required")
	case r.Check != nil && (!r.HomeAssistant || r.Unreachable):
		return errorf(Invalid, "check", "is only given when Home Assistant answered")
	}
	return nil
}

// Sweep compares every entity anchor of an active or candidate record with
// run.Check and records the sweep, in one transaction. An anchor whose state
// differs takes the new state, with checked_by SweepChecker and the check's
// detail; each record with such anchors advances its revision once and gets
// one audit row (ActionAnchor, as run.Client). Anchors already in the state
// found are not touched. Without run.Check nothing but the sweep's own row
// is written. The log keeps only the latest sweeps (jobq.RecordSweep).
//
// It returns Invalid for an empty Client, a Check without a Home Assistant
// that answered, or a check whose state is neither available nor
// unavailable (Field "check").
func (db *DB) Sweep(ctx context.Context, run SweepRun) (*Sweep, error) {
	if err := run.validate(); err != nil {
		return nil, err
	}
	var out *Sweep
	if err := db.writeGrouped(ctx, "sweep", func(tx *txn) (err error) {
		out, err = sweepTx(ctx, tx, run)
		return err
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// Sweep records a sweep as DB.Sweep does, inside the transaction: a
// scheduled sweep commits with its job's completion.
func (t *JobTx) Sweep(ctx context.Context, run SweepRun) (*Sweep, error) {
	if err := run.validate(); err != nil {
		return nil, err
	}
	return sweepTx(ctx, t.tx, run)
}

func sweepTx(ctx context.Context, tx *txn, run SweepRun) (*Sweep, error) {
	changes, keys, err := anchors.Entities(ctx, tx)
	if err != nil {
		return nil, err
	}

	s := &Sweep{At: tx.Now, RequestedBy: run.Client, HomeAssistant: run.HomeAssistant, Unreachable: run.Unreachable,
		Detail: run.Detail.String()}
	if run.Check != nil {
		for _, k := range keys {
			c := changes[k]
			found := run.Check(anchors.EntityID(k.Anchor))
			if found.State != AnchorAvailable && found.State != AnchorUnavailable {
				return nil, errorf(Invalid, "check", "gave state %q for an entity; want available or unavailable", found.State)
			}
			s.Checked++
			if found.State != c.Was.State {
				c.Now = Anchor{Anchor: k.Anchor, State: found.State, CheckedAt: tx.Now, CheckedBy: SweepChecker,
					Detail: screen.Redact(found.Detail).String()}
				s.Changed++
			}
		}
		if err := applyAnchorChangesTx(ctx, tx, run.Client, "sweep: ", changes, nil); err != nil {
			return nil, err
		}
	}
	for _, c := range changes {
		switch c.Now.State {
		case AnchorAvailable:
			s.Available++
		case AnchorUnavailable:
			s.Unavailable++
		default:
			s.Unknown++
		}
	}
	if err := jobq.RecordSweep(ctx, tx, s); err != nil {
		return nil, err
	}
	return s, nil
}

// LastSweep returns the latest recorded sweep, or nil when none ran.
func (db *DB) LastSweep(ctx context.Context) (*Sweep, error) {
	var s *Sweep
	err := db.read(ctx, "last sweep", func(tx *txn) (err error) {
		s, err = jobq.LastSweep(ctx, tx)
		return err
	})
	return s, err
}
