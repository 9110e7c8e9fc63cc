package pgengine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"
)

// LockPrefix starts the text whose hash keys an exclusive run's session
// advisory lock: hashtextextended(LockPrefix || name, 0), a bigint, in
// the same key space as the migrations' lock ("hearth migrate").
const LockPrefix = "hearth exclusive: "

// lockCheck is how often a held lock's connection is checked: when it
// has ended, PostgreSQL has released the lock, and fn is told.
const lockCheck = time.Second

// ErrLockLost is the cause of the context an exclusive run's fn sees
// cancelled when the connection holding its lock ended.
var ErrLockLost = errors.New("storage: the exclusive run's connection to PostgreSQL ended, and with it its lock")

// Exclusive runs fn while this session holds the advisory lock of name on
// a connection taken from the pool for the run, and reports whether it
// ran: when any session (another front end's, or this one's on another
// connection) holds the lock, fn does not run. The lock is released when
// fn returns, or by PostgreSQL when the connection ends first; then fn's
// context is cancelled with ErrLockLost as its cause (checked every
// lockCheck). A connection whose unlock failed is dropped, not pooled.
func (e *Engine) Exclusive(ctx context.Context, name string, fn func(ctx context.Context) error) (ran bool, err error) {
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return false, fmt.Errorf("storage: exclusive %s: %w", name, err)
	}
	defer conn.Close()
	key := LockPrefix + name
	var got bool
	if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock(hashtextextended($1, 0))`, key).Scan(&got); err != nil {
		return false, fmt.Errorf("storage: exclusive %s: lock: %w", name, err)
	}
	if !got {
		return false, nil
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		watch(runCtx, conn, cancel)
	}()
	err = fn(runCtx)
	cancel(nil)
	<-watched
	if _, uerr := conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, key); uerr != nil {
		// Dropped with its session, which releases what it holds.
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
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
