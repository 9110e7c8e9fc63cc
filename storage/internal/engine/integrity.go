package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hearth-memory/hearth/storage/internal/errs"
	"github.com/ncruces/go-sqlite3"
)

// Integrity (issue #21). SD cards and power cuts damage files; SQLite
// notices only the pages a query happens to read. So the store checks the
// whole file when it opens (or, opened with CheckLater, once the server
// serves: CheckDeferred) and again in the nightly maintenance
// (CheckIntegrity): PRAGMA quick_check for the structure of every table
// and index, then FTS5's integrity-check, which compares the full-text
// index with the records it was built from.
//
// The full-text index holds nothing the records table cannot rebuild, so
// damage confined to it is repaired on the spot and audited (ActionRepair):
// an index that disagrees with the records is rebuilt ('rebuild'); one
// whose pages are damaged, so that even a rebuild cannot clear it, is
// dropped from the schema and created anew, and the file is rewritten
// (VACUUM) to shed the pages it leaves behind. Damage anywhere else cannot
// be repaired from inside the file: the store then stays open read-only.
// Reads go on (what is damaged may fail), every write that would change a
// row is refused with ReadOnly, nothing is ever committed, and Damage says
// what was found and how to restore a backup.

// ftsTables are the full-text index: the FTS5 table and its shadow tables.
var ftsTables = []string{"records_fts", "records_fts_config", "records_fts_data", "records_fts_docsize", "records_fts_idx"}

// IndexAutomerge is the full-text index's automerge setting, which
// migration 0087 sets and recreateIndex sets again: FTS5 merges a level
// once this many segments are there (docs/measurements.md).
const IndexAutomerge = 8

// maxProblems bounds how many of SQLite's findings a report keeps.
const maxProblems = 20

// restoreHint says how an admin restores a damaged database.
const restoreHint = "stop Hearth and restore the latest good backup with `hearth restore --data DIR FILE` " +
	"(FILE made by `hearth backup`; in Home Assistant, restoring a backup of the add-on does the same)"

// Damage is what an integrity check found wrong and could not repair.
type Damage struct {
	// Path is the database file.
	Path string
	// At is when the check found it.
	At time.Time
	// Tables names the tables (with their indexes) whose own check failed,
	// sorted; empty when the damage lies outside every table, or the
	// schema itself could not be read.
	Tables []string
	// Problems are SQLite's first findings, as it words them.
	Problems []string
}

// Summary says what is damaged, e.g. "the database file /data/hearth.db
// is damaged (tables records, audit)".
func (d *Damage) Summary() string {
	where := "outside any one table"
	if len(d.Tables) > 0 {
		where = "tables " + strings.Join(d.Tables, ", ")
	}
	return fmt.Sprintf("the database file %s is damaged (%s)", d.Path, where)
}

// Message says what is damaged, what Hearth does about it and how to
// restore: for status, /health, the page and the log.
func (d *Damage) Message() string {
	return d.Summary() + ": Hearth serves reads and refuses writes until it is restored; " + restoreHint + "."
}

// refusal is the error of a write refused because of d.
func (d *Damage) refusal() *errs.Error {
	return &errs.Error{Code: errs.ReadOnly, Message: d.Summary() +
		", so Hearth is read-only: nothing was written; reads still work; an admin must " + restoreHint}
}

// IntegrityCheck is the outcome of one check of the database file.
type IntegrityCheck struct {
	// At is when the check began and Duration how long it took.
	At       time.Time
	Duration time.Duration
	// Repaired says what the check repaired; "" when nothing needed it.
	Repaired string
	// Damage is what it could not repair; nil when the file is sound.
	Damage *Damage
}

// String words the outcome for the audit and the log.
func (c *IntegrityCheck) String() string {
	var s string
	switch {
	case c.Damage != nil:
		s = c.Damage.Summary() + ": " + strings.Join(c.Damage.Problems, "; ")
	case c.Repaired != "":
		s = "sound after repair: " + c.Repaired
	default:
		s = "quick_check ok, full-text index ok"
	}
	return fmt.Sprintf("%s (%.1f s)", s, c.Duration.Seconds())
}

// checkState keeps the last check, and the repair made while opening,
// whose audit row waits for the writer loop.
type checkState struct {
	mu          sync.Mutex
	last        *IntegrityCheck
	openRepairs string
	// running is set while a check that suspect started runs.
	running atomic.Bool
}

// suspect starts an integrity check in the background, unless one runs
// or the store is already read-only: a write met a damaged page, and the
// nightly check may be hours away. The check repairs the full-text index
// or makes the store read-only, as at night.
func (e *Engine) suspect() {
	if e.damaged.Load() != nil || !e.checks.running.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer e.checks.running.Store(false)
		if e.cfg.Check != nil {
			e.cfg.Check(context.Background())
		} else {
			_, _ = e.CheckIntegrity(context.Background())
		}
	}()
}

// Damage returns the damage that keeps the store read-only, or nil.
func (e *Engine) Damage() *Damage { return e.damaged.Load() }

// LastIntegrityCheck returns the latest check, at open or nightly; ok is
// false before the first.
func (e *Engine) LastIntegrityCheck() (c IntegrityCheck, ok bool) {
	e.checks.mu.Lock()
	defer e.checks.mu.Unlock()
	if e.checks.last == nil {
		return IntegrityCheck{}, false
	}
	return *e.checks.last, true
}

// CheckIntegrity checks the whole file as opening does, repairs the
// full-text index if that is all that is wrong, and returns the outcome.
// Damage it cannot repair makes the store read-only from then on. The
// structural check runs on a read snapshot beside the writer; the index
// check and any repair hold the writer. It writes nothing of the outcome:
// storage audits it. Once the store is read-only it returns the damage
// found before without checking again.
func (e *Engine) CheckIntegrity(ctx context.Context) (*IntegrityCheck, error) {
	if d := e.damaged.Load(); d != nil {
		return &IntegrityCheck{At: d.At, Damage: d}, nil
	}
	start := time.Now()
	chk := &IntegrityCheck{At: e.now()}
	var problems []string
	if err := e.Read(ctx, "integrity check", func(tx *Tx) (err error) {
		problems, err = quickCheck(ctx, tx.Tx, "")
		return err
	}); err != nil {
		return nil, err
	}
	err := e.Exclusive(ctx, "integrity check", func(conn *sql.Conn) (err error) {
		if len(problems) > 0 {
			chk.Repaired, chk.Damage, err = e.repairStructure(ctx, conn, problems)
			if err != nil || chk.Damage != nil {
				return err
			}
		}
		repaired, damage, err := e.checkIndex(ctx, conn)
		chk.Repaired, chk.Damage = joinRepairs(chk.Repaired, repaired), damage
		return err
	})
	if err != nil {
		return nil, err
	}
	chk.Duration = time.Since(start)
	e.recordCheck(chk)
	return chk, nil
}

// recordCheck keeps chk as the last check, and its damage, if any, as the
// reason the store is read-only.
func (e *Engine) recordCheck(chk *IntegrityCheck) {
	e.checks.mu.Lock()
	e.checks.last = chk
	e.checks.mu.Unlock()
	if chk.Damage != nil {
		e.damaged.CompareAndSwap(nil, chk.Damage)
	}
}

// openChecked checks the file before anything writes to it, applies the
// pending migrations to a sound file, then checks the full-text index;
// with CheckLater, a file that needs no migration has its schema checked
// alone.
// A damaged file opens read-only, but only when it needs no migration: an
// older schema cannot be served, nor changed. Any repair is audited by
// auditOpenRepairs once the writer loop runs.
func (e *Engine) openChecked(ctx context.Context) error {
	if e.checkLater {
		// A file that needs no migration is not read whole here: its
		// schema is checked against the migrations (checkSchemaAround),
		// and CheckIntegrity checks the rest once the server serves.
		if pending, err := e.pendingMigrations(ctx); err == nil && len(pending) == 0 {
			return e.checkSchemaAround(ctx, e.migrate)
		}
	}
	// Duration counts the checks alone, not the migrations between them.
	chk := &IntegrityCheck{At: e.now()}
	start := time.Now()
	err := e.onWriter(ctx, func(conn *sql.Conn) error {
		defer func() { chk.Duration += time.Since(start) }()
		problems, err := quickCheck(ctx, conn, "")
		if err != nil || len(problems) == 0 {
			return err
		}
		chk.Repaired, chk.Damage, err = e.repairStructure(ctx, conn, problems)
		return err
	})
	if err != nil {
		return e.openError(err)
	}
	if chk.Damage == nil {
		if err := e.checkSchemaAround(ctx, e.migrate); err != nil {
			return err
		}
		start := time.Now()
		err := e.onWriter(ctx, func(conn *sql.Conn) error {
			defer func() { chk.Duration += time.Since(start) }()
			repaired, damage, err := e.checkIndex(ctx, conn)
			chk.Repaired, chk.Damage = joinRepairs(chk.Repaired, repaired), damage
			return err
		})
		if err != nil {
			return e.openError(err)
		}
	} else if pending, err := e.pendingMigrations(ctx); err != nil {
		return fmt.Errorf("storage: %s, and which migrations it has had cannot be read (%v): %s",
			chk.Damage.Summary(), err, restoreHint)
	} else if len(pending) > 0 {
		return fmt.Errorf("storage: %s; it also needs migrations (%s) that cannot run on a damaged file: %s",
			chk.Damage.Summary(), strings.Join(pending, ", "), restoreHint)
	}
	e.recordCheck(chk)
	if chk.Damage == nil {
		e.checks.openRepairs = chk.Repaired
	}
	return nil
}

// OpenRepairs says what the check while opening repaired, for the audit
// row storage writes once the writer loop runs; "" when nothing.
func (e *Engine) OpenRepairs() string { return e.checks.openRepairs }

// onWriter runs fn on the writer connection: only while opening, before
// the writer loop owns it.
func (e *Engine) onWriter(ctx context.Context, fn func(conn *sql.Conn) error) error {
	conn, err := e.writer.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return fn(conn)
}

// repairStructure localises the problems quick_check found. Damage in the
// full-text index alone is repaired by creating the index anew from the
// records; damage outside every table (lost or misfiled pages) by
// rewriting the file. It returns what it repaired, or the damage left.
func (e *Engine) repairStructure(ctx context.Context, conn *sql.Conn, problems []string) (repaired string, damage *Damage, err error) {
	tables, listed, err := damagedTables(ctx, conn)
	if err != nil {
		return "", nil, err
	}
	damage = &Damage{Path: e.path, At: e.now(), Tables: tables, Problems: problems}
	var other []string
	for _, t := range tables {
		if !slices.Contains(ftsTables, t) {
			other = append(other, t)
		}
	}
	switch {
	case !listed || len(other) > 0:
		return "", damage, nil
	case len(tables) > 0:
		how, err := repairIndex(ctx, conn)
		if err != nil {
			if corrupt(err) {
				damage.Problems = append(damage.Problems, "repairing the full-text index: "+err.Error())
				return "", damage, nil
			}
			return "", nil, err
		}
		repaired = "the full-text index was damaged (" + strings.Join(tables, ", ") + "): it was " + how
	default:
		// Lost or misfiled pages outside every table: rewriting the file
		// leaves them behind.
		if _, err := conn.ExecContext(ctx, `VACUUM`); err != nil {
			if corrupt(err) {
				damage.Problems = append(damage.Problems, "rewriting the file: "+err.Error())
				return "", damage, nil
			}
			return "", nil, err
		}
		repaired = "pages outside every table were damaged or lost (" + strings.Join(problems, "; ") + "): the file was rewritten (VACUUM)"
	}
	left, err := quickCheck(ctx, conn, "")
	if err != nil {
		return "", nil, err
	}
	if len(left) > 0 {
		damage.Problems = left
		return "", damage, nil
	}
	return repaired, nil, nil
}

// repairIndex rebuilds the full-text index from the records: in place
// ('rebuild') when its pages can still be read, else by creating it anew
// and rewriting the file (VACUUM) to shed the damaged pages. It says how.
func repairIndex(ctx context.Context, conn *sql.Conn) (how string, err error) {
	_, err = conn.ExecContext(ctx, `INSERT INTO records_fts (records_fts) VALUES ('rebuild')`)
	if err == nil {
		return "rebuilt from the records", nil
	}
	if !corrupt(err) {
		return "", err
	}
	if err := recreateIndex(ctx, conn); err != nil {
		return "", err
	}
	if _, err := conn.ExecContext(ctx, `VACUUM`); err != nil {
		return "", err
	}
	return "created anew from the records and the file rewritten (VACUUM)", nil
}

// checkIndex runs FTS5's integrity-check of the full-text index against
// the records. An index that fails is rebuilt from the records, or, if its
// pages are too damaged to rebuild in place, created anew. It returns what
// it repaired, or the damage left.
func (e *Engine) checkIndex(ctx context.Context, conn *sql.Conn) (repaired string, damage *Damage, err error) {
	first := indexCheck(ctx, conn)
	if first == nil {
		return "", nil, nil
	}
	if !corrupt(first) {
		return "", nil, first
	}
	damage = &Damage{Path: e.path, At: e.now(), Tables: []string{"records_fts"}, Problems: []string{first.Error()}}
	how, err := repairIndex(ctx, conn)
	if err != nil {
		if !corrupt(err) {
			return "", nil, err
		}
		damage.Problems = append(damage.Problems, "repairing it: "+err.Error())
		return "", damage, nil
	}
	if err := indexCheck(ctx, conn); err != nil {
		if !corrupt(err) {
			return "", nil, err
		}
		damage.Problems = append(damage.Problems, "after repair: "+err.Error())
		return "", damage, nil
	}
	return "the full-text index failed its check (" + first.Error() + "): it was " + how, nil, nil
}

// indexCheck is FTS5's integrity-check, with the records compared (rank 1).
func indexCheck(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, `INSERT INTO records_fts (records_fts, rank) VALUES ('integrity-check', 1)`)
	return err
}

// recreateIndex replaces the full-text index whose pages are damaged: its
// tables leave the schema without their pages being read (which a DROP
// would need), it is created again from the same statement and rebuilt
// from the records, all in one transaction. The old pages stay behind
// until the file is rewritten.
func recreateIndex(ctx context.Context, conn *sql.Conn) (err error) {
	var create string
	if err := conn.QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'records_fts'`).Scan(&create); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
		}
		// RESET turns schema writing off and reloads the schema, so the
		// connection never keeps a view of the tables it dropped.
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA writable_schema = RESET`)
	}()
	placeholders := strings.TrimSuffix(strings.Repeat("?, ", len(ftsTables)), ", ")
	args := make([]any, len(ftsTables))
	for i, t := range ftsTables {
		args[i] = t
	}
	for _, st := range []struct {
		q    string
		args []any
	}{
		{`PRAGMA writable_schema = ON`, nil},
		{`DELETE FROM sqlite_schema WHERE type = 'table' AND name IN (` + placeholders + `)`, args},
		{`PRAGMA writable_schema = RESET`, nil},
		{create, nil},
		// The settings in records_fts_config went with the old tables.
		{`INSERT INTO records_fts (records_fts, rank) VALUES ('automerge', ?)`, []any{IndexAutomerge}},
		{`INSERT INTO records_fts (records_fts) VALUES ('rebuild')`, nil},
		{`COMMIT`, nil},
	} {
		if _, err := conn.ExecContext(ctx, st.q, st.args...); err != nil {
			return err
		}
	}
	return nil
}

// queryer runs a query: a connection or a transaction.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// corrupt reports whether err is SQLite finding the file damaged
// (SQLITE_CORRUPT, SQLITE_NOTADB), by code.
func corrupt(err error) bool {
	return errors.Is(err, sqlite3.CORRUPT) || errors.Is(err, sqlite3.NOTADB)
}

// quickCheck runs PRAGMA quick_check over the file, or over table and its
// indexes, and returns SQLite's findings (at most maxProblems); none means
// sound. A read that meets a damaged page is a finding, not an error.
func quickCheck(ctx context.Context, q queryer, table string) ([]string, error) {
	query := `PRAGMA quick_check`
	if table != "" {
		query = `PRAGMA quick_check('` + strings.ReplaceAll(table, "'", "''") + `')`
	}
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		if corrupt(err) {
			return []string{err.Error()}, nil
		}
		return nil, err
	}
	defer rows.Close()
	var out []string
	for len(out) < maxProblems && rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		// "ok" is the whole answer of a sound check; a finding may span
		// lines under a "*** in database main ***" heading.
		for _, line := range strings.Split(s, "\n") {
			if line != "ok" && line != "" && !strings.HasPrefix(line, "*** ") && len(out) < maxProblems {
				out = append(out, line)
			}
		}
	}
	if err := rows.Err(); err != nil {
		if !corrupt(err) {
			return nil, err
		}
		if len(out) == 0 {
			out = append(out, err.Error())
		}
	}
	return out, nil
}

// damagedTables checks each table (with its indexes) on its own and
// returns those that fail, sorted. listed is false when the schema itself
// could not be read.
func damagedTables(ctx context.Context, q queryer) (tables []string, listed bool, err error) {
	rows, err := q.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite!_%' ESCAPE '!' ORDER BY name`)
	if err != nil {
		if corrupt(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, false, err
		}
		names = append(names, n)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		if corrupt(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	for _, n := range names {
		p, err := quickCheck(ctx, q, n)
		if err != nil {
			return nil, false, err
		}
		if len(p) > 0 {
			tables = append(tables, n)
		}
	}
	return tables, true, nil
}

// pendingMigrations names the embedded migrations the file has not had.
func (e *Engine) pendingMigrations(ctx context.Context) ([]string, error) {
	names, err := migrationNames()
	if err != nil {
		return nil, err
	}
	var pending []string
	for _, name := range names {
		var n int
		if err := e.writer.QueryRowContext(ctx, `SELECT COUNT(*) FROM migrations WHERE name = ?`, name).Scan(&n); err != nil {
			return nil, err
		}
		if n == 0 {
			pending = append(pending, name)
		}
	}
	return pending, nil
}

// joinRepairs joins what two steps of a check repaired.
func joinRepairs(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// migrationNames are the embedded migrations' file names, sorted.
func migrationNames() ([]string, error) {
	paths, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = path.Base(p)
	}
	slices.Sort(names)
	return names, nil
}
