package storage

import (
	"context"
	"sync"

	"github.com/hearth-memory/hearth/storage/internal/pgengine"
)

// ErrExclusiveLost is the cause (context.Cause) of the context an
// exclusive run sees cancelled when its lock went with its connection to
// PostgreSQL (RunExclusive).
var ErrExclusiveLost = pgengine.ErrLockLost

// RunExclusive runs fn unless a run of the same name holds its lock now,
// and reports whether fn ran; its error is fn's. It is for work that one
// front end of a database does at a time: the nightly maintenance, review
// and anchor sweep (docs/postgres.md, "Nightly work"). The lock is taken
// without waiting and released when fn returns.
//
// In one process the runs of a name take turns through an in-process
// lock, on either backend: a SQLite file has one process, whose lock file
// keeps others out. On PostgreSQL the run also holds the session advisory
// lock keyed hashtextextended('hearth exclusive: ' || name, 0) on a
// connection of its own, which keeps out every other front end of the
// database; PostgreSQL releases it if the connection ends first, and then
// fn's context is cancelled, with ErrExclusiveLost as its cause. An empty
// name is Invalid (Field "name").
func (db *DB) RunExclusive(ctx context.Context, name string, fn func(ctx context.Context) error) (ran bool, err error) {
	if name == "" {
		return false, errorf(Invalid, "name", "is required")
	}
	if !db.excl.take(name) {
		return false, nil
	}
	defer db.excl.release(name)
	if db.pg == nil {
		return true, fn(ctx)
	}
	return db.pg.Exclusive(ctx, name, fn)
}

// exclusive holds the names of the exclusive runs going on in this
// process. Its zero value holds none.
type exclusive struct {
	mu   sync.Mutex
	held map[string]bool
}

// take holds name and reports whether it was free.
func (x *exclusive) take(name string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.held[name] {
		return false
	}
	if x.held == nil {
		x.held = map[string]bool{}
	}
	x.held[name] = true
	return true
}

func (x *exclusive) release(name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.held, name)
}
