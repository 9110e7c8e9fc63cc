package storage

import (
	"os"
	"time"
)

// Health is the store's condition, for memory_status, /health and the
// page (issue #21).
type Health struct {
	// Path is the database file.
	Path string
	// Disk is the space of the file system holding it.
	Disk DiskSpace
	// DiskFull is set while writes fail for lack of space.
	DiskFull *DiskFull
	// Damage is set when the file is damaged: the store is read-only.
	Damage *Damage
	// LastCheck is the latest integrity check; nil before the first.
	LastCheck *IntegrityCheck
	// WALBytes is the WAL file's size now.
	WALBytes int64
	// Checkpoints are the figures of the WAL policy.
	Checkpoints CheckpointStats
}

// Health reports the store's condition. It reads no table: it is cheap
// enough for every /health request.
func (db *DB) Health() Health {
	h := Health{Path: db.path, Disk: db.DiskSpace(), Damage: db.Damage(), Checkpoints: db.CheckpointStats()}
	if d, ok := db.DiskFull(); ok {
		h.DiskFull = &d
	}
	if c, ok := db.LastIntegrityCheck(); ok {
		h.LastCheck = &c
	}
	if db.lite == nil {
		return h
	}
	if fi, err := os.Stat(db.path + "-wal"); err == nil {
		h.WALBytes = fi.Size()
	}
	return h
}

// The states of a store, as Health.State names them.
const (
	// StateOK: reads and writes work.
	StateOK = "ok"
	// StateDiskFull: writes fail for lack of space; reads work.
	StateDiskFull = "disk_full"
	// StateReadOnly: the file is damaged; writes are refused until it is
	// restored; reads work where the file can be read.
	StateReadOnly = "read_only"
)

// State names the store's state; damage outranks a full disk.
func (h Health) State() string {
	switch {
	case h.Damage != nil:
		return StateReadOnly
	case h.DiskFull != nil:
		return StateDiskFull
	}
	return StateOK
}

// Degraded lists what is wrong, one sentence each, or nothing when the
// store is sound and writable.
func (h Health) Degraded() []string {
	var out []string
	if h.DiskFull != nil {
		s := "the disk holding the database is full"
		if h.Disk.Known {
			s += " (" + FormatBytes(h.Disk.Free) + " free)"
		}
		out = append(out, s+": writes are refused since "+h.DiskFull.Since.UTC().Format(time.RFC3339)+
			" and resume once space is freed; reads work")
	}
	if h.Damage != nil {
		out = append(out, h.Damage.Message())
	}
	return out
}
