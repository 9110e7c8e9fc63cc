//go:build !linux

package pgtest

import (
	"errors"
	"os"
	"syscall"
)

// serverOwner is who runs initdb and postgres: the tests' own user; as root
// (which postgres refuses) only Linux is supported.
type serverOwner struct{}

func serverUser() (serverOwner, error) {
	if os.Geteuid() == 0 {
		return serverOwner{}, errors.New("pgtest: running as root is supported on Linux only (postgres refuses root)")
	}
	return serverOwner{}, nil
}

func (serverOwner) chown(string) error { return nil }

func (serverOwner) attr() *syscall.SysProcAttr { return nil }
