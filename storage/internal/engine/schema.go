package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver"
)

// migrationsTable is the statement that makes the table recording applied
// migrations; migrate and the expected schema both run it.
const migrationsTable = `CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)`

// schemaObject is one row of sqlite_schema: a table, index, view or
// trigger, the table it belongs to, and the statement that made it (empty
// for an index SQLite made itself).
type schemaObject struct {
	Type, Name, Table, SQL string
}

func (o schemaObject) key() string { return o.Type + " " + o.Name }

// describe names o for a message: "trigger audit_wipe (on audit)".
func (o schemaObject) describe() string {
	if o.Table != "" && o.Table != o.Name {
		return o.Type + " " + o.Name + " (on " + o.Table + ")"
	}
	return o.Type + " " + o.Name
}

// ignoredSchema reports whether the check leaves o alone: the statistics
// tables ANALYZE and PRAGMA optimize make. SQLite lets nothing else be
// named sqlite_ and no trigger sit on them.
func ignoredSchema(o schemaObject) bool {
	return o.Type == "table" && strings.HasPrefix(o.Name, "sqlite_stat")
}

// SchemaError says how a database's schema differs from the one the
// migrations it has had create: objects added, changed or missing. Any of
// them may change or delete memory behind Hearth's back (a trigger fires
// on every write), so such a file is neither restored nor opened.
type SchemaError struct {
	// Extra, Altered and Missing name the objects, e.g. "trigger x (on records)".
	Extra, Altered, Missing []string
	// Unknown names migrations the file has had that this build does not know.
	Unknown []string
	// Gap names migrations the file lacks though it has had later ones:
	// never the state migrate leaves (it runs them in order), so there is
	// no expected schema to compare with until migrate has filled the gap.
	Gap []string
}

// maxNamed is how many objects of each kind a SchemaError's message names.
const maxNamed = 10

func (e *SchemaError) Error() string {
	if len(e.Unknown) > 0 {
		return fmt.Sprintf("it has had migrations this build does not know (%s): it comes from a newer Hearth",
			strings.Join(e.Unknown, ", "))
	}
	if len(e.Gap) > 0 {
		return fmt.Sprintf("it lacks migrations (%s) that came before ones it has had", strings.Join(e.Gap, ", "))
	}
	var parts []string
	for _, p := range []struct {
		what  string
		names []string
	}{{"extra", e.Extra}, {"altered", e.Altered}, {"missing", e.Missing}} {
		if n := len(p.names); n > maxNamed {
			parts = append(parts, fmt.Sprintf("%s %s and %d more", p.what, strings.Join(p.names[:maxNamed], ", "), n-maxNamed))
		} else if n > 0 {
			parts = append(parts, p.what+" "+strings.Join(p.names, ", "))
		}
	}
	return "its schema is not the one Hearth's migrations create: " + strings.Join(parts, "; ")
}

// diffSchema compares got, a database's schema, with want, what its
// migrations create. It returns nil when they are the same, apart from
// ignoredSchema objects and the order of rows.
func diffSchema(want, got []schemaObject) *SchemaError {
	wants := make(map[string]schemaObject, len(want))
	for _, o := range want {
		if !ignoredSchema(o) {
			wants[o.key()] = o
		}
	}
	e := &SchemaError{}
	seen := make(map[string]bool, len(got))
	for _, o := range got {
		if ignoredSchema(o) {
			continue
		}
		k := o.key()
		if seen[k] {
			e.Extra = append(e.Extra, o.describe())
			continue
		}
		seen[k] = true
		switch w, ok := wants[k]; {
		case !ok:
			e.Extra = append(e.Extra, o.describe())
		case w.SQL != o.SQL || w.Table != o.Table:
			e.Altered = append(e.Altered, o.describe())
		}
	}
	for k, o := range wants {
		if !seen[k] {
			e.Missing = append(e.Missing, o.describe())
		}
	}
	if len(e.Extra)+len(e.Altered)+len(e.Missing) == 0 {
		return nil
	}
	slices.Sort(e.Extra)
	slices.Sort(e.Altered)
	slices.Sort(e.Missing)
	return e
}

// readSchema reads q's sqlite_schema.
func readSchema(ctx context.Context, q queryer) ([]schemaObject, error) {
	rows, err := q.QueryContext(ctx, `SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_schema`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []schemaObject
	for rows.Next() {
		var o schemaObject
		if err := rows.Scan(&o.Type, &o.Name, &o.Table, &o.SQL); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// appliedMigrations reads the migrations q's database has had, sorted; none
// when it has no migrations table (a new, empty file).
func appliedMigrations(ctx context.Context, q queryer) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'migrations'`)
	if err != nil {
		return nil, err
	}
	has := rows.Next()
	rows.Close()
	if !has {
		return nil, rows.Err()
	}
	if rows, err = q.QueryContext(ctx, `SELECT name FROM migrations ORDER BY name`); err != nil {
		return nil, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, rows.Err()
}

// checkSchema compares q's database with what the migrations it has had
// create (expectedSchema). It returns a *SchemaError when they differ or
// when the file has had a migration this build does not know.
func checkSchema(ctx context.Context, q queryer, funcs func(*sqlite3.Conn) error) error {
	applied, err := appliedMigrations(ctx, q)
	if err != nil {
		return err
	}
	known, err := migrationNames()
	if err != nil {
		return err
	}
	var unknown []string
	for _, name := range applied {
		if !slices.Contains(known, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		return &SchemaError{Unknown: unknown}
	}
	if len(applied) > 0 {
		last := slices.Index(known, applied[len(applied)-1])
		if gap := known[:last+1]; len(gap) != len(applied) {
			var missing []string
			for _, name := range gap {
				if !slices.Contains(applied, name) {
					missing = append(missing, name)
				}
			}
			return &SchemaError{Gap: missing}
		}
	}
	want, err := expectedSchema(ctx, applied, funcs)
	if err != nil {
		return err
	}
	got, err := readSchema(ctx, q)
	if err != nil {
		return err
	}
	if e := diffSchema(want, got); e != nil {
		return e
	}
	return nil
}

// expected caches expectedSchema's answers for the process: one per set of
// applied migrations, in practice one (all of them).
var expected struct {
	mu      sync.Mutex
	schemas map[string][]schemaObject
}

// expectedSchema is the schema the migrations named (in order) create on an
// empty database: built once per process and set of migrations, in
// memory, by running them, so it never drifts from the migrations.
func expectedSchema(ctx context.Context, names []string, funcs func(*sqlite3.Conn) error) ([]schemaObject, error) {
	key := strings.Join(names, "\x00")
	expected.mu.Lock()
	defer expected.mu.Unlock()
	if s, ok := expected.schemas[key]; ok {
		return s, nil
	}
	s, err := buildSchema(ctx, names, funcs)
	if err != nil {
		return nil, fmt.Errorf("storage: expected schema: %w", err)
	}
	if expected.schemas == nil {
		expected.schemas = map[string][]schemaObject{}
	}
	expected.schemas[key] = s
	return s, nil
}

// warmSchema starts building the schema of all the migrations, the one a
// current file is checked against, the first time it is called in a
// process, so that the build overlaps opening the file and its integrity
// check (checkSchema waits on the cache's lock, or builds it first; the
// other then finds it built).
var warmOnce sync.Once

func warmSchema(funcs func(*sqlite3.Conn) error) {
	warmOnce.Do(func() {
		names, err := migrationNames()
		if err != nil {
			return
		}
		go func() { _, _ = expectedSchema(context.Background(), names, funcs) }()
	})
}

// buildSchema runs the migrations named on a new in-memory database, as
// migrate does, and reads its schema. No migrations: nothing.
func buildSchema(ctx context.Context, names []string, funcs func(*sqlite3.Conn) error) ([]schemaObject, error) {
	if len(names) == 0 {
		return nil, nil
	}
	// What the writer's connections register: migrations may call the SQL
	// functions (hearth_session_digest) and tokenizers it registers.
	pool, err := driver.Open(":memory:", funcs)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	conn, err := pool.Conn(ctx) // one connection: each has its own memory database
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, migrationsTable); err != nil {
		return nil, err
	}
	for _, name := range names {
		buf, err := fs.ReadFile(migrationFS, "migrations/"+name)
		if err != nil {
			return nil, err
		}
		if _, err := conn.ExecContext(ctx, string(buf)); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return readSchema(ctx, conn)
}

// schemaRefusal words a SchemaError for the database: what differs and
// what to do. Other errors are openError's.
func (e *Engine) schemaRefusal(err error) error {
	var se *SchemaError
	if !errors.As(err, &se) {
		return e.openError(err)
	}
	path := e.path
	if len(se.Unknown) > 0 {
		return fmt.Errorf("storage: cannot open the database %s: %w: run that Hearth, or restore a backup this one made", path, err)
	}
	return fmt.Errorf("storage: cannot open the database %s: %w. Something other than Hearth changed it, and what it added "+
		"could change or delete memory on every write, so Hearth will not use it: restore a backup made by `hearth backup` "+
		"with `hearth restore --data DIR FILE`, or remove (or put back) the objects named", path, err)
}

// checkSchemaAround checks the schema (checkSchema) before migrate runs,
// so that nothing Hearth did not make fires on the migrations' writes,
// and again after it when migrate had anything to do. A file whose
// migrations have a gap is checked after migrate alone.
func (e *Engine) checkSchemaAround(ctx context.Context, migrate func(context.Context) error) error {
	var applied []string
	check := func() error {
		return e.onWriter(ctx, func(conn *sql.Conn) (err error) {
			if applied, err = appliedMigrations(ctx, conn); err != nil {
				return err
			}
			return checkSchema(ctx, conn, e.cfg.schemaFuncs)
		})
	}
	var se *SchemaError
	err := check()
	if err != nil && !(errors.As(err, &se) && len(se.Gap) > 0) {
		return e.schemaRefusal(err)
	}
	known, kerr := migrationNames()
	if kerr != nil {
		return kerr
	}
	before := len(applied)
	if err := migrate(ctx); err != nil {
		return e.openError(err)
	}
	if err == nil && before == len(known) {
		return nil // nothing was pending: what was checked is what runs
	}
	err = check()
	if gap := se != nil && len(se.Gap) > 0; gap && err != nil && errors.As(err, &se) {
		// After a gap the migrations that ran late leave objects a later
		// one had rewritten in their earlier form: only what no migration
		// makes is refused.
		se.Altered, se.Missing = nil, nil
		if len(se.Extra) == 0 {
			return nil
		}
	}
	if err != nil {
		return e.schemaRefusal(err)
	}
	return nil
}
