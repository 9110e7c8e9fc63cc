package server

import (
	"math"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/storage"
)

// storeHealth converts the store's condition for memory_status (issue #21).
func storeHealth(h storage.Health) *hearthv1.StoreHealth {
	p := &hearthv1.StoreHealth{State: h.State(), Problems: h.Degraded(), Path: h.Path,
		WalKib: clamp32(h.WALBytes >> 10), Checkpoints: clamp32(int64(h.Checkpoints.Count)),
		CheckpointMaxMs: clamp32(h.Checkpoints.Max.Milliseconds()), CheckpointTotalMs: clamp32(h.Checkpoints.Total.Milliseconds()),
		CheckpointsUnfinished: clamp32(int64(h.Checkpoints.Unfinished))}
	if h.Disk.Known {
		free, total := clamp32(int64(h.Disk.Free>>20)), clamp32(int64(h.Disk.Total>>20))
		p.FreeMib, p.TotalMib = &free, &total
	}
	if d := h.DiskFull; d != nil {
		p.DiskFullSince = ts(d.Since)
		p.WritesRefused = clamp32(int64(d.Refused))
	}
	if d := h.Damage; d != nil {
		p.DamagedTables = d.Tables
		p.Damage = d.Problems
	}
	if c := h.LastCheck; c != nil {
		p.CheckedAt = ts(c.At)
		p.CheckMs = clamp32(c.Duration.Milliseconds())
		p.Check = c.String()
	}
	return p
}

// clamp32 fits n into a uint32 field.
func clamp32(n int64) uint32 {
	return uint32(max(0, min(n, math.MaxUint32)))
}
