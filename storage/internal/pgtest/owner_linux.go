package pgtest

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// serverOwner is who runs initdb and postgres: the postgres user when the
// tests run as root (postgres refuses root), else the tests' own user.
type serverOwner struct {
	uid, gid int
	set      bool
}

func serverUser() (serverOwner, error) {
	if os.Geteuid() != 0 {
		return serverOwner{}, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return serverOwner{}, fmt.Errorf("pgtest: running as root, and postgres refuses root: %w "+
			"(Debian's postgresql package makes the postgres user)", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return serverOwner{}, fmt.Errorf("pgtest: user postgres has uid %q, gid %q", u.Uid, u.Gid)
	}
	return serverOwner{uid: uid, gid: gid, set: true}, nil
}

func (o serverOwner) chown(path string) error {
	if !o.set {
		return nil
	}
	return os.Chown(path, o.uid, o.gid)
}

// attr runs the process as o and has the kernel stop it (SIGQUIT,
// postgres's immediate shutdown) if the test binary dies without Main's
// stop.
func (o serverOwner) attr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Pdeathsig: syscall.SIGQUIT}
	if o.set {
		a.Credential = &syscall.Credential{Uid: uint32(o.uid), Gid: uint32(o.gid)}
	}
	return a
}
