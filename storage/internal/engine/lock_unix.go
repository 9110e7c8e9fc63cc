//go:build unix

package engine

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes f's exclusive flock without waiting. flock locks belong to
// the open file, so a second Open in the same process is refused too.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return ErrLocked
	}
	return err
}

func unlockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
