package storage

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/hearth-memory/hearth/storage/namespace"
	"github.com/hearth-memory/hearth/storage/screen"
)

// Rename moves every namespace under the owner prefix From to the owner
// prefix To: with From "github/old" and To "github/new", github/old/api
// becomes github/new/api (docs/design.md R-N6). Both are github/<owner> or
// gitea/<owner>; the forge may change.
type Rename struct {
	From, To string
}

// Renamed is what one Rename moved: rows per table, by table name. A table
// with nothing moved is absent.
type Renamed struct {
	Rename
	Rows map[string]int
}

// Records returns how many records the rename moved.
func (r Renamed) Records() int { return r.Rows["records"] }

// renameTables are the tables a rename moves, by their namespace column.
// Only records carry a revision, which advances with the move. The other
// tables keyed by record id (anchors, usage) move with their records, and
// audit keeps the names it was written with. A table that a later migration
// adds with a namespace column is one line here; a table listed here that
// no migration has created yet is skipped.
var renameTables = []struct {
	table, column string
	revision      bool
}{
	{"records", "namespace", true},
	{"questions", "namespace", false},
	{"receipts", "namespace", false},
}

// RenameNamespaces applies renames in one transaction, in the order given,
// and returns what each moved. Every moved record's revision advances and
// its updated_at becomes now; each rename that moved anything writes one
// audit row (client SystemClient) with its counts. Running it again changes
// nothing more: nothing is left under a From prefix. Renames do not chain
// within one call unless given in that order.
//
// It returns Invalid (Field "renames[i].from" or ".to") for a prefix that is
// not github/<owner> or gitea/<owner>, or a rename onto itself; and an
// internal error when a listed table lacks its namespace column. A refusal
// writes nothing.
func (db *DB) RenameNamespaces(ctx context.Context, renames []Rename) ([]Renamed, error) {
	for i, r := range renames {
		field := fmt.Sprintf("renames[%d]", i)
		if err := checkOwnerPrefix(r.From); err != nil {
			return nil, errorf(Invalid, field+".from", "%v", err)
		}
		if err := checkOwnerPrefix(r.To); err != nil {
			return nil, errorf(Invalid, field+".to", "%v", err)
		}
		if r.From == r.To {
			return nil, errorf(Invalid, field+".to", "is the same as from")
		}
	}
	if len(renames) == 0 {
		return nil, nil
	}
	var out []Renamed
	if err := db.writeGrouped(ctx, "rename", func(tx *txn) error {
		moved := make([]Renamed, 0, len(renames))
		for _, r := range renames {
			done, err := renameTx(ctx, tx, r)
			if err != nil {
				return err
			}
			moved = append(moved, done)
		}
		out = moved
		return nil
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// renameTx moves one owner prefix in every table of renameTables that
// exists, and audits the move when it moved anything.
func renameTx(ctx context.Context, tx *txn, r Rename) (Renamed, error) {
	done := Renamed{Rename: r, Rows: map[string]int{}}
	// Namespaces under From sort in [From+"/", From+"0"): '0' follows '/'.
	lo, hi := r.From+"/", r.From+"0"
	var counts []string
	for _, t := range renameTables {
		ok, err := hasColumn(ctx, tx, t.table, t.column)
		if err != nil {
			return done, err
		}
		if !ok {
			continue
		}
		args := []any{r.To + "/", len(lo) + 1, lo, hi}
		if t.revision {
			args = append(args, tx.Now.UnixMilli())
		}
		res, err := tx.ExecContext(ctx, renameSQL(t.table, t.column, t.revision), args...)
		if err != nil {
			return done, classify("rename "+t.table, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return done, classify("rename "+t.table, err)
		}
		if n > 0 {
			done.Rows[t.table] = int(n)
			counts = append(counts, fmt.Sprintf("%d %s", n, t.table))
		}
	}
	if len(counts) == 0 {
		return done, nil
	}
	return done, insertAuditTx(ctx, tx, AuditEntry{
		Client: SystemClient, Action: ActionRename, Namespace: r.To,
		Detail: screen.Redact(r.From + " -> " + r.To + ": moved " + strings.Join(counts, ", ")),
	})
}

// renameSQL moves the rows of table whose column lies in [?3, ?4) to the
// prefix ?1, keeping what follows the old prefix (from byte ?2 on); with
// revision, it also advances their revision and sets updated_at to ?5.
func renameSQL(table, column string, revision bool) string {
	set := fmt.Sprintf(`%[1]s = ?1 || substr(%[1]s, ?2)`, column)
	if revision {
		set += `, revision = revision + 1, updated_at = ?5`
	}
	return fmt.Sprintf(`UPDATE %s SET %s WHERE %s >= ?3 AND %s < ?4`, table, set, column, column)
}

// hasColumn reports whether table exists; it is an error for an existing
// table to lack column, since renameTables says it has one.
func hasColumn(ctx context.Context, tx *txn, table, column string) (bool, error) {
	// The catalogs are each engine's own.
	tables := `SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table' AND name = ?`
	columns := `SELECT name FROM pragma_table_info(?) WHERE name = ?`
	if tx.Engine() == BackendPostgres {
		tables = `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?`
		columns = `SELECT column_name FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = ? AND column_name = ?`
	}
	var n int
	if err := tx.QueryRowContext(ctx, tables, table).Scan(&n); err != nil {
		return false, classify("rename", err)
	}
	if n == 0 {
		return false, nil
	}
	var name string
	err := tx.QueryRowContext(ctx, columns, table, column).Scan(&name)
	if err == sql.ErrNoRows {
		return false, fmt.Errorf("storage: rename: table %s has no column %s", table, column)
	}
	if err != nil {
		return false, classify("rename", err)
	}
	return true, nil
}

// checkOwnerPrefix checks github/<owner> or gitea/<owner>.
func checkOwnerPrefix(p string) error {
	kind, owner, ok := strings.Cut(p, "/")
	if !ok || (kind != "github" && kind != "gitea") || strings.Contains(owner, "/") {
		return fmt.Errorf("must be an owner prefix, github/<owner> or gitea/<owner>")
	}
	return namespace.ValidateSegment(owner)
}
