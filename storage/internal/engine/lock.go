package engine

import (
	"errors"
	"fmt"
	"os"
	"strconv"
)

// ErrLocked means another process holds the database: a running server, or
// a restore in progress. Open and Lock return it wrapped, naming the lock
// file and the holder's process id as the holder wrote it.
var ErrLocked = errors.New("the database is held by another process")

// Lock is an exclusive hold on a database file: the operating system's
// advisory lock on the file <database>.lock beside it (flock on Unix,
// LockFileEx on Windows). Open takes it for the life of a DB, so one
// process at a time serves a data directory, and restore takes it while it
// swaps the files.
//
// The operating system drops the lock when its process ends, however it
// ends: after a crash or a kill -9 the next Open or restore simply takes
// it. The file itself stays (it holds only the last holder's pid, for
// messages) and is never a reason to refuse.
type Lock struct {
	f *os.File
}

// LockPath returns the lock file of the database at path.
func LockPath(path string) string { return path + ".lock" }

// AcquireLock takes the lock of the database at path without waiting. It
// returns an error wrapping ErrLocked when another process holds it.
func AcquireLock(path string) (*Lock, error) {
	lp := LockPath(path)
	f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("storage: lock: %w", err)
	}
	if err := lockFile(f); err != nil {
		if errors.Is(err, ErrLocked) {
			holder := make([]byte, 20)
			n, _ := f.ReadAt(holder, 0)
			f.Close()
			if pid, perr := strconv.Atoi(string(trimNL(holder[:n]))); perr == nil {
				return nil, fmt.Errorf("storage: %w (pid %d holds %s)", ErrLocked, pid, lp)
			}
			return nil, fmt.Errorf("storage: %w (%s)", ErrLocked, lp)
		}
		f.Close()
		return nil, fmt.Errorf("storage: lock %s: %w", lp, err)
	}
	// The pid is for messages only; the lock is what counts.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// Release drops the lock. It is safe on a nil Lock and to call twice.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := unlockFile(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == 0) {
		b = b[:len(b)-1]
	}
	return b
}
