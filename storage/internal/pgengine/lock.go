package pgengine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"
)

// LockPrefix starts the text whose hash keys a named session advisory
// lock: hashtextextended(LockPrefix || name, 0), a bigint, in the same key
// space as the migrations' lock ("hearth migrate").
const LockPrefix = "hearth exclusive: "

// lockCheck is how often a held lock's connection is checked while an
// exclusive run goes on: when it has ended, PostgreSQL has released the
// lock, and the run is told.
const lockCheck = time.Second

// ErrLockLost is the cause of the context an exclusive run's fn sees
// cancelled when the connection holding its lock ended.
var ErrLockLost = errors.New("storage: the exclusive run's connection to PostgreSQL ended, and with it its lock")

// The statements on a named lock; $1 is LockPrefix + name.
const (
	sqlTryLock = `SELECT pg_try_advisory_lock(hashtextextended($1, 0))`
	sqlUnlock  = `SELECT pg_advisory_unlock(hashtextextended($1, 0))`
	// sqlFree reports whether no session holds the lock, taking it for
	// that moment only (CASE runs its branches in order).
	sqlFree = `SELECT CASE WHEN pg_try_advisory_lock(hashtextextended($1, 0))
		THEN pg_advisory_unlock(hashtextextended($1, 0)) ELSE false END`
)

// Lock is a named session advisory lock held on a connection of its own,
// taken from the pool until Unlock.
type Lock struct {
	conn *sql.Conn
	key  string
}

// TryLock takes the lock of name without waiting, or returns nil when
// another session (another front end's, or this one's on another
// connection) holds it. PostgreSQL releases it when the connection ends.
func (e *Engine) TryLock(ctx context.Context, name string) (*Lock, error) {
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("storage: lock %s: %w", name, err)
	}
	key := LockPrefix + name
	var got bool
	if err := conn.QueryRowContext(ctx, sqlTryLock, key).Scan(&got); err != nil || !got {
		conn.Close()
		if err != nil {
			return nil, fmt.Errorf("storage: lock %s: %w", name, err)
		}
		return nil, nil
	}
	return &Lock{conn: conn, key: key}, nil
}

// Unlock releases the lock and gives its connection back to the pool; a
// connection whose unlock failed is dropped with its session, which
// releases what it holds.
func (l *Lock) Unlock() {
	if _, err := l.conn.ExecContext(context.Background(), sqlUnlock, l.key); err != nil {
		_ = l.conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	l.conn.Close()
}

// Free reports whether no session holds the lock of name now.
func (e *Engine) Free(ctx context.Context, name string) (bool, error) {
	var free bool
	if err := e.db.QueryRowContext(ctx, sqlFree, LockPrefix+name).Scan(&free); err != nil {
		return false, fmt.Errorf("storage: lock %s: %w", name, err)
	}
	return free, nil
}

// Exclusive runs fn while this session holds the lock of name (TryLock),
// and reports whether it ran: when another session holds the lock, fn
// does not run. The lock is released when fn returns, or by PostgreSQL
// when the connection ends first; then fn's context is cancelled with
// ErrLockLost as its cause (checked every lockCheck).
func (e *Engine) Exclusive(ctx context.Context, name string, fn func(ctx context.Context) error) (ran bool, err error) {
	l, err := e.TryLock(ctx, name)
	if err != nil || l == nil {
		return false, err
	}
	defer l.Unlock()
	runCtx, cancel := context.WithCancelCause(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		watch(runCtx, l.conn, cancel)
	}()
	err = fn(runCtx)
	cancel(nil)
	<-watched
	return true, err
}

// watch checks conn every lockCheck until ctx ends and cancels it, with
// ErrLockLost, once conn fails.
func watch(ctx context.Context, conn *sql.Conn, cancel context.CancelCauseFunc) {
	t := time.NewTicker(lockCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := conn.PingContext(ctx); err != nil && ctx.Err() == nil {
			cancel(ErrLockLost)
			return
		}
	}
}
