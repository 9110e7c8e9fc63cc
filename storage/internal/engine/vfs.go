package engine

import (
	"errors"
	"fmt"
	"sync"
	"syscall"

	"github.com/hearth-memory/hearth/storage/internal/vfswrap"
	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/vfs"
)

// The store reaches its files through a VFS of its own: the operating
// system's (or, in tests, the one WithVFS names) with three changes. SQLite
// answers a write that finds the disk full with SQLITE_FULL when its VFS
// says so; the driver's OS VFS checks for ENOSPC on the bare errno while
// os.File returns it inside an *fs.PathError, so a full disk reaches
// SQLite as a generic SQLITE_IOERR_WRITE, and the errno is lost by the time
// the error comes back. The hook gives SQLite the code it expects. And
// subjournals stay in memory up to subjournalMemory (see
// vfswrap.MemorySubjournals): a store's statement journal passes SQLite's
// own 64 KiB, and a temporary file for it on every write transaction cost
// the single writer more than the store's statements did. And the frames a
// commit appends to the write-ahead log are one write rather than two a
// frame (see vfswrap.JoinFrames): a group of stores commits some eighty
// pages, and on the virtual machines measured a system call costs more
// than its page.

// subjournalMemory bounds one subjournal's memory; the writer has one at
// a time. Everyday writes stay far below it; a bulk statement (a rename of
// every record) past it goes on in a temporary file.
const subjournalMemory = 8 << 20

// vfsNames maps a base VFS name to the name of the store's VFS over it.
var vfsNames sync.Map

// storeVFS registers, once, the store's VFS over base ("" is the OS's)
// and returns its name.
func storeVFS(base string) (string, error) {
	if name, ok := vfsNames.Load(base); ok {
		return name.(string), nil
	}
	b, ok := vfs.Find(base).(vfs.VFSFilename)
	if !ok {
		return "", fmt.Errorf("storage: open: no SQLite VFS named %q", base)
	}
	name := "hearth"
	if base != "" {
		name += "+" + base
	}
	vfs.Register(name, vfswrap.New(b, fullHook, vfswrap.MemorySubjournals(subjournalMemory), vfswrap.JoinFrames()))
	vfsNames.Store(base, name)
	return name, nil
}

// fullHook turns ENOSPC (and a quota's EDQUOT) from any write, sync or
// allocation into SQLITE_FULL, keeping the system error.
func fullHook(_ vfswrap.Op, _ string, err error) error {
	if err != nil && (errors.Is(err, syscall.ENOSPC) || isQuota(err)) {
		return vfs.SystemError(err, sqlite3.FULL)
	}
	return err
}
