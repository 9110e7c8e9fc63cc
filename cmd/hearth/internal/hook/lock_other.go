//go:build !unix

package hook

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
)

// lock takes the spool's lock without waiting: ok is false when another
// drain holds it. Without flock, the lock is a file created exclusively;
// one left by a killed drainer is taken over after spoolCallTimeout × 3.
func (s *Spool) lock() (unlock func(), ok bool, err error) {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, false, err
	}
	p := filepath.Join(s.Dir, ".lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		fi, serr := os.Stat(p)
		if serr != nil || s.Now().Sub(fi.ModTime()) < 3*spoolCallTimeout {
			return nil, false, nil
		}
		os.Remove(p)
		f, err = os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	}
	if err != nil {
		return nil, false, nil
	}
	return func() { f.Close(); os.Remove(p) }, true, nil
}

// detach is a no-op where processes have no sessions to leave.
func detach(*exec.Cmd) {}
