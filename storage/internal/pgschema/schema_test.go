package pgschema_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ncruces/go-sqlite3/driver"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// column is one column as the comparison sees it: its type class, whether
// it may be NULL, and its default (casts dropped).
type column struct {
	Name, Type string
	NotNull    bool
	Default    string
}

// schema is what TestSchema_SameAsSQLite compares: columns by table,
// the names of indexes, triggers and views, and foreign keys.
type schema struct {
	Columns  map[string][]column
	Indexes  []string
	Triggers []string
	Views    []string
	FKs      []string // "table(col) -> table(col) on delete action"
}

// The objects that are SQLite's own and have a PostgreSQL counterpart of
// another shape (docs/postgres.md, The schema): the FTS5 tables, their
// source views, pending list and namespace keys; the triggers that feed
// them; the generated fts_scope column.
var (
	sqliteOnlyTable   = regexp.MustCompile(`^(records_fts|records_cjk|records_vocab)(_.*)?$|^records_fts_pending$|^namespace_keys$|^sqlite_`)
	sqliteOnlyTrigger = regexp.MustCompile(`^records_(fts|cjk)_(insert|delete|update)$`)
	sqliteOnlyView    = regexp.MustCompile(`^records_(fts|cjk)_source$`)
	sqliteOnlyColumn  = map[string]bool{"records.fts_scope": true}
	// PostgreSQL's own: the full-text columns, the word index's lengths
	// (0003, which FTS5 keeps in its docsize table) and the indexes, and
	// the refusal of TRUNCATE, which fires no row trigger.
	postgresOnlyColumn  = map[string]bool{"records.fts": true, "records.cjk": true, "records.fts_len": true}
	postgresOnlyIndex   = map[string]bool{"records_fts_idx": true, "records_cjk_idx": true}
	postgresOnlyTrigger = map[string]bool{"audit_no_truncate": true, "audit_prunes_no_truncate": true}
	// questions.weight was SQLite's INTEGER column sessions, renamed (0091)
	// and holding REAL values since; PostgreSQL declares what it holds.
	retyped = map[string]string{"questions.weight": "real"}
)

// The schema the PostgreSQL migrations make has every table, column (type,
// NULL or not, default), index, trigger, view and foreign key that
// SQLite's migrations make, and nothing else, but for the objects each
// keeps for its own full-text machinery. A SQLite migration without its
// PostgreSQL counterpart fails here.
func TestSchema_SameAsSQLite(t *testing.T) {
	t.Parallel()
	want := sqliteSchema(t)
	got := postgresSchema(t)
	for table, cols := range want.Columns {
		if got.Columns[table] == nil {
			t.Errorf("table %s is missing on PostgreSQL", table)
			continue
		}
		if a, b := fmt.Sprint(cols), fmt.Sprint(got.Columns[table]); a != b {
			t.Errorf("table %s:\n SQLite     %s\n PostgreSQL %s", table, a, b)
		}
	}
	for table := range got.Columns {
		if want.Columns[table] == nil {
			t.Errorf("table %s is on PostgreSQL only", table)
		}
	}
	for _, c := range []struct {
		what      string
		want, got []string
	}{
		{"indexes", want.Indexes, got.Indexes},
		{"triggers", want.Triggers, got.Triggers},
		{"views", want.Views, got.Views},
		{"foreign keys", want.FKs, got.FKs},
	} {
		if !slices.Equal(c.want, c.got) {
			t.Errorf("%s differ:\n SQLite     %q\n PostgreSQL %q", c.what, c.want, c.got)
		}
	}
}

// sqliteSchema migrates a new SQLite database with storage.Open and reads
// its schema back through a connection of its own.
func sqliteSchema(t *testing.T) schema {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hearth.db")
	sdb, err := storage.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := sdb.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := driver.Open("file:" + path + "?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	s := schema{Columns: map[string][]column{}}
	objs := query(t, raw, `SELECT type, name, tbl_name FROM sqlite_schema ORDER BY name`)
	for _, o := range objs {
		typ, name, table := o[0], o[1], o[2]
		switch {
		case typ == "table" && !sqliteOnlyTable.MatchString(name) && name != "migrations":
			for _, c := range query(t, raw, `SELECT name, type, "notnull", coalesce(dflt_value, ''), pk FROM pragma_table_xinfo(?)`, name) {
				key := name + "." + c[0]
				if sqliteOnlyColumn[key] {
					continue
				}
				class := map[string]string{"INTEGER": "integer", "REAL": "real", "TEXT": "text", "BLOB": "blob"}[c[1]]
				if r, ok := retyped[key]; ok {
					class = r
				}
				// A PRIMARY KEY column is NOT NULL on PostgreSQL whatever it
				// says; SQLite's WITHOUT ROWID tables enforce it too.
				s.Columns[name] = append(s.Columns[name], column{c[0], class, c[2] == "1" || c[4] != "0", c[3]})
			}
			for _, fk := range query(t, raw, `SELECT "from", "table", coalesce("to", ''), on_delete FROM pragma_foreign_key_list(?)`, name) {
				s.FKs = append(s.FKs, fmt.Sprintf("%s(%s) -> %s(%s) on delete %s", name, fk[0], fk[1], fk[2], strings.ToLower(fk[3])))
			}
		case typ == "index" && !strings.HasPrefix(name, "sqlite_autoindex_"):
			s.Indexes = append(s.Indexes, name)
		case typ == "trigger" && !sqliteOnlyTrigger.MatchString(name) && !sqliteOnlyTable.MatchString(table):
			s.Triggers = append(s.Triggers, name)
		case typ == "view" && !sqliteOnlyView.MatchString(name):
			s.Views = append(s.Views, name)
		}
	}
	slices.Sort(s.FKs)
	return s
}

// postgresSchema reads the schema of a database pgtest migrated.
func postgresSchema(t *testing.T) schema {
	t.Helper()
	db := pgtest.Open(t)
	s := schema{Columns: map[string][]column{}}
	cast := regexp.MustCompile(`::[a-z ]+$`)
	for _, c := range query(t, db, `SELECT table_name, column_name, data_type, is_nullable, coalesce(column_default, '')
		FROM information_schema.columns c
		WHERE table_schema = 'public' AND table_name IN (SELECT tablename FROM pg_tables WHERE schemaname = 'public')
		ORDER BY table_name, ordinal_position`) {
		table, name := c[0], c[1]
		if table == "migrations" || postgresOnlyColumn[table+"."+name] {
			continue
		}
		class := map[string]string{"bigint": "integer", "double precision": "real", "text": "text", "bytea": "blob"}[c[2]]
		if class == "" {
			class = c[2]
		}
		s.Columns[table] = append(s.Columns[table], column{name, class, c[3] == "NO", cast.ReplaceAllString(c[4], "")})
	}
	for _, r := range query(t, db, `SELECT indexname FROM pg_indexes i WHERE schemaname = 'public'
		AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conname = i.indexname) ORDER BY indexname`) {
		if !postgresOnlyIndex[r[0]] {
			s.Indexes = append(s.Indexes, r[0])
		}
	}
	for _, r := range query(t, db, `SELECT tgname FROM pg_trigger WHERE NOT tgisinternal ORDER BY tgname`) {
		if !postgresOnlyTrigger[r[0]] {
			s.Triggers = append(s.Triggers, r[0])
		}
	}
	for _, r := range query(t, db, `SELECT viewname FROM pg_views WHERE schemaname = 'public' ORDER BY viewname`) {
		s.Views = append(s.Views, r[0])
	}
	for _, r := range query(t, db, `SELECT c.conrelid::regclass::text, a.attname, c.confrelid::regclass::text, f.attname,
			CASE c.confdeltype WHEN 'a' THEN 'no action' WHEN 'c' THEN 'cascade' WHEN 'n' THEN 'set null' ELSE c.confdeltype::text END
		FROM pg_constraint c
		JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
		JOIN pg_attribute f ON f.attrelid = c.confrelid AND f.attnum = c.confkey[1]
		WHERE c.contype = 'f'`) {
		s.FKs = append(s.FKs, fmt.Sprintf("%s(%s) -> %s(%s) on delete %s", r[0], r[1], r[2], r[3], r[4]))
	}
	slices.Sort(s.FKs)
	return s
}

// query returns every row of q as strings.
func query(t *testing.T, db *sql.DB, q string, args ...any) [][]string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = v.String
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
