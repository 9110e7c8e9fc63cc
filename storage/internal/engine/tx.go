package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Tx is a transaction with the time fixed when it began: Now, which every
// row it writes carries. Its Exec, Query and Prepare go through the
// pool's statement cache (stmtcache.go), or, on another engine's
// transaction (NewTx), through that engine's Dialect.
type Tx struct {
	*sql.Tx
	Now   time.Time
	stmts *stmtCache
	// dialect, set on another engine's transactions, turns each
	// statement's SQL into that engine's before it runs; nil on SQLite's.
	dialect Dialect
	// write is set on the writer's transactions: their statements run
	// without the caller's cancellation (see statementContext).
	write bool
}

// Dialect turns the record domain's SQL, written for SQLite, into the SQL
// of another engine's connections (PostgreSQL's: placeholders rebound,
// docs/postgres.md), and its arguments into what that engine's columns
// hold as SQLite's driver does (a bool as the 0/1 of a flag). SQL is
// called for every statement and caches what it makes.
type Dialect interface {
	SQL(query string) string
	Args(args []any) []any
	// Name names the engine ("postgres"), for the few statements that
	// have no form both read (Tx.Engine).
	Name() string
}

// Engine names the engine tx runs on: "sqlite", or its Dialect's Name.
// The domain asks it only where no one statement reads the same on both
// (docs/postgres.md, The dialect).
func (tx *Tx) Engine() string {
	if tx.dialect == nil {
		return "sqlite"
	}
	return tx.dialect.Name()
}

// NewTx gives another engine's transaction tx (docs/design.md, "Storage
// layout") to the record domain as a Tx: its rows stamped now, each
// statement's SQL turned by d. Its statements run under their caller's
// context; the engine's own driver caches their preparation.
func NewTx(tx *sql.Tx, now time.Time, d Dialect) *Tx {
	return &Tx{Tx: tx, Now: now, dialect: d}
}

// begin starts a write transaction (BEGIN IMMEDIATE) on the writer, its
// rows stamped now. Only the writer loop and the migrations call it;
// everything else goes through Write.
func (e *Engine) begin(ctx context.Context, now time.Time) (*Tx, error) {
	tx, err := e.writer.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return &Tx{Tx: tx, Now: now, stmts: e.writerStmts, write: true}, nil
}

// statementContext is the context a statement of tx runs under. A write
// statement keeps ctx's values but not its cancellation: SQLite answers an
// interrupted INSERT, UPDATE or DELETE by rolling back the whole
// transaction, which would undo the other callers' work committed in the
// same group. A write is short and bounded; a caller that gives up before
// its turn is skipped instead (see runGroup).
func (tx *Tx) statementContext(ctx context.Context) context.Context {
	if tx.write {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// maxGroup bounds how many callers' writes share one transaction.
const maxGroup = 64

// groupLinger is how long an idle writer keeps a group open for one more
// write, while the groups of late have been larger than this one (see
// gather); groupLingerMax bounds the group's waiting in all. Otherwise the
// group after a large one often ran a single write while the others were
// on their way back (docs/measurements.md). A lone writer never waits.
const (
	groupLinger    = 2 * time.Millisecond
	groupLingerMax = 4 * groupLinger
)

// writeRequest is one caller's write, waiting for the writer loop.
type writeRequest struct {
	ctx context.Context
	op  string
	fn  func(tx *Tx) error
	// alone, set instead of fn, runs by itself on the writer connection
	// with no transaction open (exclusive).
	alone func(conn *sql.Conn) error
	// solo runs fn in a transaction of its own, never grouped (writeOwnTx).
	solo bool
	done chan writeResult // buffered: the loop never waits for the caller
}

type writeResult struct {
	err   error
	panic any
}

// ErrClosed is returned by a write after Close.
var ErrClosed = errors.New("storage: closed")

// Write runs fn in a write transaction (BEGIN IMMEDIATE) on the single
// writer connection and commits what fn wrote. op names the operation in
// internal errors ("storage: <op>: commit: …"). When fn fails, nothing it
// wrote is kept and its error comes back as fn returned it: fn classifies
// its own errors. A failure to begin or to commit is an
// internal error naming op.
//
// Writes are group-committed: the writer loop runs the fns of the callers
// waiting at that moment, and of those that come while they run, in ONE
// transaction, each under its own SAVEPOINT, so a fn that fails is undone
// alone and the others still commit together, and N concurrent writers pay
// for one commit (one FTS5 flush, one WAL write) instead of N. A lone
// caller runs alone, as before. fn keeps to a contract that makes this
// safe:
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
//   - fn runs its statements under the caller's ctx, which it captures; once
//     fn has started they are not cancelled by it (statementContext). It
//     takes its time from tx.now, which every row of the group shares.
//
// A caller whose ctx ends while it waits for its turn gets ctx's error and
// its fn never runs. A panic in fn is re-raised in the caller.
func (e *Engine) Write(ctx context.Context, op string, fn func(tx *Tx) error) error {
	return e.send(&writeRequest{ctx: ctx, op: op, fn: fn, done: make(chan writeResult, 1)})
}

// WriteSolo is Write for a fn that changes many pages (a batch of the
// background workers): fn runs in a transaction of its own, never under a
// savepoint, whose in-memory subjournal would hold a copy of every page fn
// changes until the commit (docs/measurements.md); alone, each statement's
// own journal holds only what it changed. Writes behind it wait one commit.
func (e *Engine) WriteSolo(ctx context.Context, op string, fn func(tx *Tx) error) error {
	return e.send(&writeRequest{ctx: ctx, op: op, fn: fn, solo: true, done: make(chan writeResult, 1)})
}

// send hands r to the writer loop and returns its result.
func (e *Engine) send(r *writeRequest) error {
	ctx := r.ctx
	// Counted until the writer loop takes r (received) or the caller
	// gives up: a count lowered by the sender once it runs again would
	// still hold writes the loop has taken.
	e.waiting.Add(1)
	select {
	case e.writes <- r:
	case <-ctx.Done():
		e.waiting.Add(-1)
		return ctx.Err()
	case <-e.closing:
		e.waiting.Add(-1)
		return ErrClosed
	}
	res := <-r.done
	if res.panic != nil {
		panic(res.panic)
	}
	return res.err
}

// received counts a write the writer loop has taken off e.writes.
func (e *Engine) received() { e.waiting.Add(-1) }

// WritesWaiting returns how many writes wait for the writer loop to take
// them: the queue in front of the single writer.
func (e *Engine) WritesWaiting() int64 { return e.waiting.Load() }

// GroupStats returns how many transactions the writer loop has committed
// since open and how many writes they held: writes/groups is how many
// writes a commit serves.
func (e *Engine) GroupStats() (groups, writes int64) { return e.groups.Load(), e.grouped.Load() }

// writeLoop owns the writer connection: it takes the first waiting write
// and runs it with the others that wait or come soon after (gather, up to
// maxGroup) as one group. It returns when Close is called, after finishing
// the group in hand; writes sent to it are never dropped.
func (e *Engine) writeLoop() {
	defer close(e.loopDone)
	g := &gather{e: e, timer: time.NewTimer(time.Hour), peak: 1}
	g.timer.Stop()
	// tidy fires when the writer has been idle for tidyAfter (or
	// Config.TidyAfter) since a
	// commit that changed the full-text index (tidyIndex).
	tidy := time.NewTimer(time.Hour)
	tidy.Stop()
	idle := tidyAfter
	if e.cfg.TidyAfter != 0 {
		idle = e.cfg.TidyAfter
	}
	arm := func() {
		if idle > 0 {
			tidy.Reset(idle)
		}
	}
	var next *writeRequest // an exclusive write met while gathering
	for {
		first := next
		next = nil
		if first == nil {
			select {
			case first = <-e.writes:
				e.received()
			case <-tidy.C:
				// A step at a time, each while no write waits; a write
				// that waits goes first, and its group arms tidy again.
				if e.waiting.Load() > 0 {
					arm()
				} else if e.tidyIndex() {
					e.afterWrite()
					tidy.Reset(0)
				}
				continue
			case <-e.closing:
				return
			}
		}
		if first.alone != nil {
			e.runAlone(first)
			e.afterWrite()
			continue
		}
		gen := e.gen.Load()
		g.start(first)
		e.runGroup(g)
		next = g.next
		g.done()
		e.afterWrite()
		if e.gen.Load() != gen {
			arm()
		}
	}
}

// gather collects the writes of one group for the writer loop: those
// waiting when the group starts, those that come while its writes run and,
// while the group is smaller than peak, the largest group of late, those
// that come while the writer waits a moment for them (more): the writers
// whose previous writes the last group answered are then on their way
// back. Under a single writer peak stays 1 and nothing ever waits. An
// exclusive write met ends the group and runs next.
type gather struct {
	e     *Engine
	timer *time.Timer
	// peak is the size of the largest recent group; it falls by one per
	// group smaller than it, so a load that dropped stops the waiting soon.
	peak int

	// The group in hand: its first write, how long it waited for more,
	// how many writes it took and the exclusive write that ended it.
	first  *writeRequest
	waited time.Duration
	taken  int
	next   *writeRequest
}

// start begins a group with first.
func (g *gather) start(first *writeRequest) {
	g.first, g.waited, g.taken, g.next = first, 0, 1, nil
}

// done ends the group, which took g.taken writes. A solo write's group
// says nothing of how many writers there are.
func (g *gather) done() {
	if !g.first.solo {
		g.peak = max(g.taken, g.peak-1)
	}
}

// waiting returns the writes waiting now, up to the group's bound. A solo
// write's group takes none.
func (g *gather) waiting() []*writeRequest {
	var out []*writeRequest
	for g.next == nil && g.taken < maxGroup && !g.first.solo {
		select {
		case r := <-g.e.writes:
			g.e.received()
			g.add(&out, r)
		default:
			return out
		}
	}
	return out
}

// more returns the writes waiting now or, when none is and the group is
// still smaller than peak, the first to arrive within groupLinger (with
// those waiting behind it), as long as the group has waited less than
// groupLingerMax in all. It returns none when the group is complete, as a
// solo write's always is.
func (g *gather) more() []*writeRequest {
	if out := g.waiting(); len(out) > 0 || g.next != nil || g.first.solo || g.taken >= min(g.peak, maxGroup) {
		return out
	}
	wait := min(groupLinger, groupLingerMax-g.waited)
	if wait <= 0 {
		return nil
	}
	start := time.Now()
	g.timer.Reset(wait)
	defer func() {
		g.timer.Stop()
		g.waited += time.Since(start)
	}()
	var out []*writeRequest
	select {
	case r := <-g.e.writes:
		g.e.received()
		g.add(&out, r)
	case <-g.timer.C:
		return nil
	case <-g.e.closing:
		return nil
	}
	return append(out, g.waiting()...)
}

// add puts r in the group, or keeps it for next when it is exclusive or
// solo.
func (g *gather) add(out *[]*writeRequest, r *writeRequest) {
	if r.alone != nil || r.solo {
		g.next = r
		return
	}
	g.taken++
	*out = append(*out, r)
}

// Exclusive runs fn on the writer connection between groups, with no
// transaction open, as the only thing the writer does meanwhile: for work
// that cannot run inside a transaction (VACUUM, a schema repair). It waits
// its turn as write does; fn's error comes back as it returned it.
func (e *Engine) Exclusive(ctx context.Context, op string, fn func(conn *sql.Conn) error) error {
	return e.send(&writeRequest{ctx: ctx, op: op, alone: fn, done: make(chan writeResult, 1)})
}

// runAlone runs an exclusive write and answers it.
func (e *Engine) runAlone(r *writeRequest) {
	if err := r.ctx.Err(); err != nil {
		r.done <- writeResult{err: err}
		return
	}
	conn, err := e.writer.Conn(context.Background())
	if err != nil {
		r.done <- writeResult{err: fmt.Errorf("storage: %s: %w", r.op, err)}
		return
	}
	defer conn.Close()
	var res writeResult
	func() {
		defer func() {
			if p := recover(); p != nil {
				res = writeResult{panic: p}
			}
		}()
		res.err = r.alone(conn)
	}()
	res.err = e.writeError(r.op, res.err)
	r.done <- res
}

// runGroup runs one group of writes in one transaction and answers each:
// the write g started with, those waiting behind it and those gathered
// while they run (g.more), as long as the transaction holds.
//
// While the file is damaged (integrity.go) the store is read-only: each fn
// runs under its own savepoint, one that changed any row is undone and
// refused with ReadOnly, and the transaction is rolled back, never
// committed; a fn that only read answers as usual. While the disk is full
// (diskfull.go), a commit that changed rows says space is back. A failure
// that is a full disk reaches its caller as the Full error; one that met a
// damaged page starts an integrity check (writeError).
func (e *Engine) runGroup(g *gather) {
	var live []*writeRequest
	var results []writeResult
	// enter adds the writes whose callers still wait to the group; a
	// caller whose ctx ended is answered at once and its fn never runs.
	enter := func(rs []*writeRequest) {
		for _, r := range rs {
			if err := r.ctx.Err(); err != nil {
				r.done <- writeResult{err: err}
				continue
			}
			live = append(live, r)
			results = append(results, writeResult{})
		}
	}
	enter(append([]*writeRequest{g.first}, g.waiting()...))
	if len(live) == 0 {
		return
	}
	answer := func() {
		for i, r := range live {
			results[i].err = e.writeError(r.op, results[i].err)
			r.done <- results[i]
		}
	}
	defer answer()
	failAll := func(err error) {
		for i := range results {
			if results[i].err == nil && results[i].panic == nil {
				results[i].err = err
			}
		}
	}

	// The transaction is the loop's, not any caller's: a caller's ctx
	// ending must not roll back the others' work.
	tx, err := e.begin(context.Background(), e.now())
	if err != nil {
		for i, r := range live {
			results[i].err = fmt.Errorf("storage: %s: begin: %w", r.op, err)
		}
		return
	}
	defer tx.Rollback()

	damage := e.damaged.Load()
	watch := damage != nil || e.full.on()
	var changes int64
	if watch {
		changes = TotalChanges(tx)
	}

	// A lone write, with no other writer about, runs without a savepoint;
	// so does a solo write, whose group is always one.
	if len(live) == 1 && damage == nil && (g.peak <= 1 || g.first.solo) {
		results[0] = call(live[0].fn, tx)
		if results[0].err == nil && results[0].panic == nil {
			if err := e.indexPendingTx(tx, live); err != nil {
				results[0].err = fmt.Errorf("storage: %s: full-text index: %w", live[0].op, err)
				return
			}
			changed := watch && TotalChanges(tx) != changes
			if err := tx.Commit(); err != nil {
				results[0].err = fmt.Errorf("storage: %s: commit: %w", live[0].op, err)
			} else {
				e.committed(live)
				if changed {
					e.full.wakeUp()
				}
			}
		}
		return
	}
	// The savepoint statements go through the statement cache like the
	// writes themselves: run as text, each was compiled anew, twice per
	// write of the group.
	ctx := context.Background()
	for i := 0; ; i++ {
		if i == len(live) {
			if enter(g.more()); i == len(live) {
				break
			}
		}
		r := live[i]
		if _, err := tx.ExecContext(ctx, "SAVEPOINT w"); err != nil {
			failAll(fmt.Errorf("storage: %s: savepoint: %w", r.op, err))
			return
		}
		results[i] = call(r.fn, tx)
		if damage != nil && results[i].panic == nil {
			// A write that changed a row, or met a damaged page, is refused.
			if n := TotalChanges(tx); results[i].err == nil && (n != changes || n < 0) || corrupt(results[i].err) {
				results[i].err = damage.refusal()
			}
		}
		if results[i].err != nil || results[i].panic != nil {
			// A fn's failure undoes its own work. Should SQLite have
			// rolled back the whole transaction (a full disk, an I/O
			// error), the savepoint is gone and so is every earlier fn's
			// work: then every caller of the group fails.
			if _, err := tx.ExecContext(ctx, "ROLLBACK TO w"); err != nil {
				failAll(fmt.Errorf("storage: %s: a write in the same group failed: %w", r.op, firstErr(results[i], err)))
				return
			}
		}
		if _, err := tx.ExecContext(ctx, "RELEASE w"); err != nil {
			failAll(fmt.Errorf("storage: %s: release: %w", r.op, err))
			return
		}
		if damage != nil {
			// A rollback does not lower the count: start from here.
			changes = TotalChanges(tx)
		}
	}
	if damage != nil {
		return // read-only: nothing to commit; the deferred rollback ends tx
	}
	if err := e.indexPendingTx(tx, live); err != nil {
		failAll(fmt.Errorf("storage: %s: full-text index: %w", live[0].op, err))
		return
	}
	changed := watch && TotalChanges(tx) != changes
	if err := tx.Commit(); err != nil {
		failAll(fmt.Errorf("storage: %s: commit: %w", live[0].op, err))
		return
	}
	e.committed(live)
	if changed {
		e.full.wakeUp()
	}
}

// committed counts a committed group and advances the write generation
// after a commit that may have changed the full-text index, so that cached
// document frequencies are counted again.
func (e *Engine) committed(group []*writeRequest) {
	e.groups.Add(1)
	e.grouped.Add(int64(len(group)))
	if e.touchesIndex(group) {
		e.gen.Add(1)
	}
}

// touchesIndex reports whether a write of group may have changed the
// records or their full-text index: any op but those Config.Untouched
// names.
func (e *Engine) touchesIndex(group []*writeRequest) bool {
	for _, r := range group {
		if e.cfg.Untouched == nil || !e.cfg.Untouched(r.op) {
			return true
		}
	}
	return false
}

// indexPendingTx adds to the full-text index the records tx stored, which
// the insert trigger noted in records_fts_pending (migration 0082), and
// clears the notes: once per transaction, just before the commit, so that
// FTS5 writes one index segment for the group's records rather than one per
// record at each savepoint. A group whose ops never store a record skips
// it. A record already in the index (its docsize row is there) is not
// added twice. The rows go in rowid order: FTS5 writes out what it holds
// whenever a rowid is not above the last one, and a group's records of
// several namespaces would otherwise make a segment per namespace change.
func (e *Engine) indexPendingTx(tx *Tx, group []*writeRequest) error {
	if !e.touchesIndex(group) {
		return nil
	}
	ctx := context.Background()
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO records_fts (rowid, title, content, fts_scope)
		SELECT (k.key << 40) | r.seq, r.title, r.content, r.fts_scope
		FROM records_fts_pending AS p JOIN records AS r ON r.seq = p.seq
			JOIN namespace_keys AS k ON k.namespace = r.namespace
		WHERE NOT EXISTS (SELECT 1 FROM records_fts_docsize AS d WHERE d.id = (k.key << 40) | r.seq)
		ORDER BY 1`); err != nil {
		return err
	}
	// WHERE 1 keeps SQLite from truncating the table, which writes its
	// page even when it is empty.
	_, err := tx.ExecContext(ctx, `DELETE FROM records_fts_pending WHERE 1`)
	return err
}

// TotalChanges is how many rows tx's connection has changed since it
// opened (SQLite's total_changes()), or -1 when it cannot tell.
func TotalChanges(tx *Tx) int64 {
	var n int64
	if err := tx.Tx.QueryRowContext(context.Background(), `SELECT total_changes()`).Scan(&n); err != nil {
		return -1
	}
	return n
}

// call runs fn, catching a panic to re-raise in its caller.
func call(fn func(*Tx) error, tx *Tx) (res writeResult) {
	defer func() {
		if p := recover(); p != nil {
			res = writeResult{panic: p}
		}
	}()
	return writeResult{err: fn(tx)}
}

// firstErr is the error a failed fn gave, or else err.
func firstErr(r writeResult, err error) error {
	if r.err != nil {
		return r.err
	}
	return err
}

// Read runs fn in a read-only transaction on the reader pool: one
// consistent WAL snapshot for every statement fn runs, taken at its first.
// op names the operation in internal errors. fn keeps to write's contract:
// it neither ends tx nor keeps it, and gives results through its closure.
// A read never blocks the writer, nor the writer a read, but for the
// moment a checkpoint truncates the WAL (checkpoint.go).
func (e *Engine) Read(ctx context.Context, op string, fn func(tx *Tx) error) error {
	// The WAL policy may hold new reads back for a moment (checkpoint.go).
	if err := e.readers.enter(ctx); err != nil {
		return err
	}
	defer e.readers.leave()
	tx, err := e.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("storage: %s: begin read: %w", op, err)
	}
	t := &Tx{Tx: tx, Now: e.now(), stmts: e.readerStmts}
	defer t.Rollback()

	return fn(t)
}

// tidyAfter is how long the writer stays idle after a commit that changed
// the full-text index before it runs Config.Tidy, a step at a time.
const tidyAfter = 250 * time.Millisecond

// tidyIndex runs one Config.Tidy step on the writer's connection, between
// groups, and reports whether it changed anything (a step that did not is
// rolled back: it wrote nothing). A damaged file or a full disk is left
// alone.
func (e *Engine) tidyIndex() bool {
	if e.cfg.Tidy == nil || e.damaged.Load() != nil || e.full.on() {
		return false
	}
	ctx := context.Background()
	// No clock: the merge writes no row that keeps a time, and the idle
	// writer reads nothing a caller may be changing.
	tx, err := e.begin(ctx, time.Time{})
	if err != nil {
		return false
	}
	defer tx.Rollback()
	merged, err := e.cfg.Tidy(ctx, tx)
	if err != nil || !merged {
		return false
	}
	if err := tx.Commit(); err != nil {
		return false
	}
	e.tidied.Add(1)
	return true
}
