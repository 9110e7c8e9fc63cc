//go:build !unix

package hook

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"time"
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

// lockFile creates path exclusively, waiting at most wait for another
// holder to remove it; a file older than wait × 4 is a holder's that died.
func lockFile(path string, wait time.Duration) (unlock func(), err error) {
	for deadline := time.Now().Add(wait); ; {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			return func() { f.Close(); os.Remove(path) }, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, err
		}
		if fi, serr := os.Stat(path); serr == nil && time.Since(fi.ModTime()) > 4*wait {
			os.Remove(path)
			continue
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// detach is a no-op where processes have no sessions to leave.
func detach(*exec.Cmd) {}
