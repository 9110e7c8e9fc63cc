//go:build !unix && !windows

package engine

import (
	"errors"
	"os"
)

// lockFile refuses: without an advisory lock Hearth cannot tell whether a
// server holds the data directory, so it does not open one.
func lockFile(*os.File) error {
	return errors.New("no file locking on this platform")
}

func unlockFile(*os.File) error { return nil }
