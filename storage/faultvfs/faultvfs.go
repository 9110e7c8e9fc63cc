// Package faultvfs is a test seam for the full-disk path: a SQLite VFS that
// is the operating system's own, with a switch that makes writes fail as
// they fail on a full file system, with the same error os.File returns
// (ENOSPC). Everything above it — the store's mapping of that error,
// SQLite's rollback, the driver's error — then runs as it does when a real
// disk fills, without root and without a tmpfs.
//
// Only tests import this package: no Hearth binary contains it, and a store
// uses it only when opened with storage.WithVFS and the name Register gave.
package faultvfs

import (
	"io/fs"
	"sync/atomic"
	"syscall"

	"github.com/hearth-memory/hearth/storage/internal/vfswrap"
	"github.com/ncruces/go-sqlite3/vfs"
)

// VFS is a registered fault-injecting VFS.
type VFS struct {
	name    string
	full    atomic.Bool
	refused atomic.Int64
}

// Register registers a new VFS under name and returns it, writable.
func Register(name string) *VFS {
	v := &VFS{name: name}
	vfs.Register(name, vfswrap.New(vfs.Find("").(vfs.VFSFilename), v.hook))
	return v
}

// Name is the name the VFS was registered under.
func (v *VFS) Name() string { return v.name }

// SetFull turns the full disk on or off. While it is on, every write and
// every preallocation through the VFS fails with ENOSPC; reads, syncs and
// truncations work.
func (v *VFS) SetFull(full bool) { v.full.Store(full) }

// Refused counts the operations refused since Register.
func (v *VFS) Refused() int64 { return v.refused.Load() }

func (v *VFS) hook(op vfswrap.Op, name string, err error) error {
	if err != nil || !v.full.Load() {
		return err
	}
	switch op {
	case vfswrap.Write, vfswrap.Allocate:
		v.refused.Add(1)
		// What (*os.File).WriteAt returns on a full file system.
		return &fs.PathError{Op: string(op), Path: name, Err: syscall.ENOSPC}
	}
	return nil
}
