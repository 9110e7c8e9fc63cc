package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/hearth-memory/hearth/storage/internal/timeline"
)

// TestSQL_NotReprepared runs the statements that reads run many times with
// changing arguments (Bootstrap's per-namespace and per-section queries, a
// timeline's page) and fails when SQLite re-prepares one inside
// sqlite3_step, as it did for a LIMIT parameter (sqllimit_test.go) and for
// Bootstrap's b.section = ?2: a re-preparation costs more than such a
// statement's own work.
func TestSQL_NotReprepared(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	type run struct {
		sql  string
		args func(i int) []any
	}
	runs := []run{
		{bootstrapRankedSQL, func(i int) []any { return []any{fmt.Sprint("github/acme/r", i%3), int64(1 + i%3), int64(32 - i%5)} }},
		{bootstrapUnavailableSQL, func(i int) []any { return []any{fmt.Sprint("github/acme/r", i%3), int64(2 + i%2), int64(1)} }},
	}
	for _, q := range []TimelineQuery{
		{},
		{Namespaces: []string{"github/acme/api", "global"}, Types: []string{TypeNote}},
		{Statuses: []string{StatusCandidate}, Since: time.Unix(1, 0)},
	} {
		q.Limit = 20
		for _, after := range []*timeline.Cursor{nil, {At: 5, ID: "x"}} {
			query, args := timeline.SQL(timelineDefaults(q), after)
			runs = append(runs, run{query, func(i int) []any {
				out := make([]any, len(args))
				for j, a := range args {
					switch a := a.(type) {
					case int:
						out[j] = a + i%7
					case int64:
						out[j] = a + int64(i%7)
					case string:
						out[j] = a + fmt.Sprint(i%2)
					default:
						out[j] = a
					}
				}
				return out
			}})
		}
	}
	conn, err := db.lite.Reader().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		c := dc.(interface{ Raw() *sqlite3.Conn }).Raw()
		for _, r := range runs {
			st, _, err := c.Prepare(r.sql)
			if err != nil {
				return fmt.Errorf("%s: %w", r.sql, err)
			}
			for i := range 12 {
				for j, a := range r.args(i) {
					if err := bind(st, j+1, a); err != nil {
						return err
					}
				}
				for st.Step() {
				}
				if err := st.Reset(); err != nil {
					return err
				}
			}
			if n := st.Status(sqlite3.STMTSTATUS_REPREPARE, false); n != 0 {
				t.Errorf("re-prepared %d times in 12 runs:%s", n, r.sql)
			}
			st.Close()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// bind binds a statement argument of the kinds the runs use.
func bind(st *sqlite3.Stmt, i int, a any) error {
	switch a := a.(type) {
	case nil:
		return st.BindNull(i)
	case int:
		return st.BindInt64(i, int64(a))
	case int64:
		return st.BindInt64(i, a)
	case string:
		return st.BindText(i, a)
	}
	return fmt.Errorf("argument %d: %T", i, a)
}
