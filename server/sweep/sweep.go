// Package sweep checks entity: anchors against Home Assistant (docs/design.md R-H1,
// R-H3). A sweep reads every entity state with one request through the
// Supervisor (package homeassistant) and then, in one transaction, gives
// each entity anchor the state Home Assistant shows:
//
//   - the entity is there with a state other than unavailable or unknown:
//     available;
//   - its state is unavailable or unknown: unavailable, the state in the
//     detail;
//   - it is not among the states (deleted or renamed): unavailable.
//
// When Home Assistant does not answer (401, 502, a timeout, a connection
// error, a body that does not read) the sweep records that it was
// unreachable and changes nothing. Outside Home Assistant (no
// SUPERVISOR_TOKEN) it records that there is none, and entity anchors stay
// unknown. Home Assistant is only read.
package sweep

import (
	"context"
	"errors"

	"github.com/hearth-memory/hearth/server/homeassistant"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
)

// Details the sweep records.
const (
	// NoHomeAssistant is the detail of a sweep outside Home Assistant.
	NoHomeAssistant = "no Home Assistant (SUPERVISOR_TOKEN is not set): entity anchors stay unknown"
	// NotFound is the detail of an entity that is not among the states.
	NotFound = "not in Home Assistant"
)

// Sweeper runs sweeps.
type Sweeper struct {
	ha *homeassistant.Client
}

// New returns a Sweeper reading through ha; nil means Hearth runs outside
// Home Assistant.
func New(ha *homeassistant.Client) *Sweeper {
	return &Sweeper{ha: ha}
}

// HomeAssistant reports whether the Sweeper has a Home Assistant to read.
func (s *Sweeper) HomeAssistant() bool { return s.ha != nil }

// Check reads Home Assistant's states (outside any transaction: it waits on
// the network) and returns the sweep to record for client. It fails only
// when ctx ends; Home Assistant's failures are part of the run.
func (s *Sweeper) Check(ctx context.Context, client string) (storage.SweepRun, error) {
	run := storage.SweepRun{Client: client, HomeAssistant: s.ha != nil}
	if s.ha == nil {
		run.Detail = screen.Redact(NoHomeAssistant)
		return run, nil
	}
	states, err := s.ha.States(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return storage.SweepRun{}, ctx.Err()
		}
		var u *homeassistant.Unreachable
		if !errors.As(err, &u) {
			return storage.SweepRun{}, err
		}
		run.Unreachable = true
		run.Detail = screen.Redact(u.Error())
		return run, nil
	}
	run.Check = func(entityID string) storage.EntityCheck {
		return Found(states, entityID)
	}
	return run, nil
}

// Found is what Home Assistant's states say of one entity's anchor.
func Found(states map[string]string, entityID string) storage.EntityCheck {
	st, ok := states[entityID]
	switch {
	case !ok:
		return storage.EntityCheck{State: storage.AnchorUnavailable, Detail: NotFound}
	case st == "unavailable" || st == "unknown":
		return storage.EntityCheck{State: storage.AnchorUnavailable, Detail: "state " + st}
	}
	return storage.EntityCheck{State: storage.AnchorAvailable}
}

// Run checks and records a sweep for client, in a transaction of its own.
func (s *Sweeper) Run(ctx context.Context, db *storage.DB, client string) (*storage.Sweep, error) {
	run, err := s.Check(ctx, client)
	if err != nil {
		return nil, err
	}
	return db.Sweep(ctx, run)
}
