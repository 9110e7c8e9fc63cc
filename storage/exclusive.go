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
	if !db.excl.take(name, nil) {
		return false, nil
	}
	defer db.excl.release(name)
	if db.pg == nil {
		return true, fn(ctx)
	}
	return db.pg.Exclusive(ctx, name, fn)
}

// ownerLock names the lock a running lease owner holds (HoldOwner).
func ownerLock(owner string) string { return "lease owner: " + owner }

// HoldOwner marks owner, the name a worker's leases carry, as running
// until release is called or the store closes: ReleaseLeases, run by
// another worker at its start, leaves owner's leases alone meanwhile
// (docs/postgres.md, "Nightly work"). It holds the lock named
// "lease owner: " + owner as RunExclusive holds its name's, for as long;
// on PostgreSQL a front end that dies releases it with its connection.
// An empty owner is Invalid, one held already Exists (Field "owner").
func (db *DB) HoldOwner(ctx context.Context, owner string) (release func(), err error) {
	if owner == "" {
		return nil, errorf(Invalid, "owner", "is required")
	}
	name := ownerLock(owner)
	var (
		once sync.Once
		l    *pgengine.Lock
	)
	release = func() {
		once.Do(func() {
			if l != nil {
				l.Unlock()
			}
			db.excl.release(name)
		})
	}
	if !db.excl.take(name, release) {
		return nil, errorf(Exists, "owner", "runs already in this process")
	}
	if db.pg != nil {
		if l, err = db.pg.TryLock(ctx, name); err != nil || l == nil {
			db.excl.release(name)
			if err == nil {
				err = errorf(Exists, "owner", "runs already on another front end")
			}
			return nil, err
		}
	}
	return release, nil
}

// ownerHeld reports whether owner runs (HoldOwner), in this process or,
// on PostgreSQL, on any front end of the database.
func (db *DB) ownerHeld(ctx context.Context, owner string) (bool, error) {
	name := ownerLock(owner)
	if db.excl.held(name) {
		return true, nil
	}
	if db.pg == nil {
		return false, nil
	}
	free, err := db.pg.Free(ctx, name)
	return !free, err
}

// exclusive holds the names of the exclusive runs and held owners of this
// process, each with what releases it at Close (nil for a run, which ends
// with its fn). Its zero value holds none.
type exclusive struct {
	mu   sync.Mutex
	took map[string]func()
}

// take holds name, released by release at Close, and reports whether it
// was free.
func (x *exclusive) take(name string, release func()) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.took[name]; ok {
		return false
	}
	if x.took == nil {
		x.took = map[string]func(){}
	}
	x.took[name] = release
	return true
}

func (x *exclusive) held(name string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	_, ok := x.took[name]
	return ok
}

func (x *exclusive) release(name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.took, name)
}

// releaseAll releases what HoldOwner holds still (at Close).
func (x *exclusive) releaseAll() {
	x.mu.Lock()
	var fns []func()
	for _, f := range x.took {
		if f != nil {
			fns = append(fns, f)
		}
	}
	x.mu.Unlock()
	for _, f := range fns {
		f()
	}
}
