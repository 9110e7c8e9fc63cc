// Package pgschema is Hearth's schema on PostgreSQL: the migrations,
// embedded and applied in order, each once, as storage applies SQLite's
// (docs/postgres.md, The schema).
package pgschema

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Names returns the migrations' file names, in the order they apply.
func Names() []string {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		panic(err) // the pattern is constant and valid
	}
	for i, n := range names {
		names[i] = path.Base(n)
	}
	slices.Sort(names)
	return names
}

// lockKey names the session lock Migrate holds: front ends starting at
// once on one database migrate it one after the other.
const lockKey = "hearth migrate"

// Migrate applies to db every migration it has not had, each in a
// transaction of its own with its row in migrations (name, applied_at in
// unix milliseconds), as storage does on SQLite. Several front ends may
// call it on one database at once: a session advisory lock makes them take
// turns, and each finds the work of those before it done. A database that
// has had a migration this build does not know comes from a newer Hearth
// and is refused, changed in nothing.
func Migrate(ctx context.Context, db *sql.DB, now func() time.Time) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("pgschema: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(hashtextextended($1, 0))`, lockKey); err != nil {
		return fmt.Errorf("pgschema: lock: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, lockKey)

	if _, err := conn.ExecContext(ctx,
		`CREATE TABLE IF NOT EXISTS migrations (name TEXT COLLATE "C" PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("pgschema: migrations table: %w", err)
	}
	applied, err := appliedNames(ctx, conn)
	if err != nil {
		return err
	}
	names := Names()
	var unknown []string
	for _, a := range applied {
		if !slices.Contains(names, a) {
			unknown = append(unknown, a)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("pgschema: the database has had migrations this build does not know (%s): it comes from a newer Hearth",
			strings.Join(unknown, ", "))
	}
	for _, name := range names {
		if slices.Contains(applied, name) {
			continue
		}
		if err := apply(ctx, conn, name, now()); err != nil {
			return fmt.Errorf("pgschema: migration %s: %w", name, err)
		}
	}
	return nil
}

// appliedNames reads the names in migrations.
func appliedNames(ctx context.Context, conn *sql.Conn) ([]string, error) {
	rows, err := conn.QueryContext(ctx, `SELECT name FROM migrations ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("pgschema: migrations: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("pgschema: migrations: %w", err)
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// apply runs one migration file and records it, in one transaction.
func apply(ctx context.Context, conn *sql.Conn, name string, now time.Time) error {
	buf, err := fs.ReadFile(migrationFS, "migrations/"+name)
	if err != nil {
		return err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// Without arguments the statements go as one simple query: a file
	// holds several.
	if _, err := tx.ExecContext(ctx, string(buf)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO migrations (name, applied_at) VALUES ($1, $2)`,
		name, now.UnixMilli()); err != nil {
		return err
	}
	return tx.Commit()
}
