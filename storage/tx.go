package storage

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// txn is a transaction with the time fixed when it began.
type txn struct {
	*sql.Tx
	now   time.Time
	stmts *stmtCache
}

// begin starts a write transaction (BEGIN IMMEDIATE) on the writer. Only
// write and the migrations call it; everything else goes through write.
func (db *DB) begin(ctx context.Context) (*txn, error) {
	tx, err := db.writer.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return &txn{Tx: tx, now: db.now(), stmts: db.writerStmts}, nil
}

// write runs fn in one write transaction (BEGIN IMMEDIATE) on the single
// writer connection and commits what fn wrote. op names the operation in
// internal errors ("storage: <op>: commit: …"). When fn fails, nothing it
// wrote is kept and its error comes back as fn returned it: fn classifies
// its own errors (classify, errorf). A failure to begin or to commit is an
// internal error naming op.
//
// fn keeps to a contract that lets a later change (group commit, issue #16)
// run the fns of several callers in ONE transaction, each under its own
// SAVEPOINT, without touching any caller:
//
//   - fn never commits or rolls back tx and never opens another transaction
//     (write, read, or a pool directly): the writer has one connection, so
//     a write inside a write waits for itself. Undoing is write's job.
//   - fn keeps nothing of tx (the txn, its rows or statements) after it
//     returns; a Tx handed to job effects is valid only inside fn too.
//   - fn gives its results only through variables its closure captures, and
//     assigns them rather than appending to them, so that running it again
//     leaves no trace of an earlier run. The caller reads them only when
//     write returns nil: a fn that succeeded is still undone when the commit
//     fails.
//   - fn runs its statements under the caller's ctx, which it captures, and
//     takes its time from tx.now, which every row of the transaction shares
//     (in a group, every fn of the group).
func (db *DB) write(ctx context.Context, op string, fn func(tx *txn) error) error {
	tx, err := db.begin(ctx)
	if err != nil {
		return fmt.Errorf("storage: %s: begin: %w", op, err)
	}
	defer tx.Rollback()

	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("storage: %s: commit: %w", op, err)
	}
	return nil
}

// read runs fn in a read-only transaction on the reader pool: one
// consistent WAL snapshot for every statement fn runs, taken at its first.
// op names the operation in internal errors. fn keeps to write's contract:
// it neither ends tx nor keeps it, and gives results through its closure.
// A read never blocks the writer, nor the writer a read.
func (db *DB) read(ctx context.Context, op string, fn func(tx *txn) error) error {
	tx, err := db.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("storage: %s: begin read: %w", op, err)
	}
	t := &txn{Tx: tx, now: db.now(), stmts: db.readerStmts}
	defer t.Rollback()

	return fn(t)
}
