package main

import (
	"context"

	"github.com/hearth-memory/hearth/server/version"
	"github.com/hearth-memory/hearth/storage"
)

// health is the body of GET /health (docs/design.md R-T4). status and version are
// what clients have always read: status stays "ok" while the daemon
// serves. The rest says whether writes work (issue #21): store is ok,
// disk_full or read_only, degraded is true unless it is ok, problems says
// what is wrong and what to do, and disk is the data directory's space.
type health struct {
	Status  string `json:"status"`
	Version string `json:"version"`
	// Backend names the database the records are in: sqlite or postgres
	// (docs/operations.md, "PostgreSQL").
	Backend  string     `json:"backend"`
	Store    string     `json:"store"`
	Degraded bool       `json:"degraded"`
	Problems []string   `json:"problems"`
	Disk     healthDisk `json:"disk"`
}

type healthDisk struct {
	// FreeBytes and TotalBytes are absent where the platform cannot tell.
	FreeBytes  *uint64 `json:"free_bytes,omitempty"`
	TotalBytes *uint64 `json:"total_bytes,omitempty"`
	// Full is set while writes fail for lack of space.
	Full bool `json:"full"`
}

func healthBody(backend string, h storage.Health) health {
	b := health{Status: "ok", Version: version.Version, Backend: backend, Store: h.State(), Problems: h.Degraded()}
	b.Degraded = b.Store != storage.StateOK
	if b.Problems == nil {
		b.Problems = []string{}
	}
	if h.Disk.Known {
		b.Disk.FreeBytes, b.Disk.TotalBytes = &h.Disk.Free, &h.Disk.Total
	}
	b.Disk.Full = h.DiskFull != nil
	return b
}

// logStore logs the integrity check the store made when it opened, and
// the damage that keeps it read-only, where the admin reads the log.
func (d *Daemon) logStore(ctx context.Context) {
	if chk, ok := d.db.LastIntegrityCheck(); ok {
		d.logCheck(ctx, &chk)
	}
}

// logCheck logs a check made at the start, while opening or just after
// (checkStore).
func (d *Daemon) logCheck(ctx context.Context, chk *storage.IntegrityCheck) {
	switch {
	case chk.Damage != nil:
		d.Log.ErrorContext(ctx, "database damaged: serving read-only", "problem", chk.Damage.Message(),
			"findings", chk.Damage.Problems)
	case chk.Repaired != "":
		d.Log.WarnContext(ctx, "database repaired at start", "repair", chk.Repaired, "ms", chk.Duration.Milliseconds())
	default:
		d.Log.InfoContext(ctx, "database checked at start", "result", "ok", "ms", chk.Duration.Milliseconds())
	}
}

// checkStore checks the whole database file in the background once the
// daemon serves, unless the store checked it while opening (the store is
// opened with storage.CheckLater: docs/operations.md, "Start-up"). Damage
// makes the store read-only, as a check at open or at night does; Close
// stops a check still running.
func (d *Daemon) checkStore() {
	ctx, cancel := context.WithCancel(context.Background())
	d.checkStop, d.checked = cancel, make(chan struct{})
	// PostgreSQL checks its own pages: there is no file to check.
	if _, ok := d.db.LastIntegrityCheck(); ok || d.db.Backend() != storage.BackendSQLite {
		close(d.checked)
		return
	}
	go func() {
		defer close(d.checked)
		if d.CheckHold != nil {
			select {
			case <-d.CheckHold:
			case <-ctx.Done():
				return
			}
		}
		chk, err := d.db.CheckDeferred(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			d.Log.ErrorContext(ctx, "integrity check after start", "err", err)
		case err == nil:
			d.logCheck(ctx, chk)
		}
	}()
}
