package storage

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ncruces/go-sqlite3"
)

// SQLite (3.50, with STAT4 built in) plans a statement for the value bound
// to a bare LIMIT parameter: every execution with a new binding re-prepares
// the statement inside sqlite3_step, which cost a search, a bootstrap and a
// timeline more than their own work. LIMIT +?N is the same limit with no
// value for the planner to peek at.

// TestSQL_NoBareLimitParameter holds the package's queries to LIMIT +?.
func TestSQL_NoBareLimitParameter(t *testing.T) {
	bare := regexp.MustCompile(`(?i)\b(LIMIT|OFFSET)\s+\?`)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			if bare.MatchString(line) {
				t.Errorf("%s:%d: a bare LIMIT/OFFSET parameter re-prepares the statement at every run; write LIMIT +?: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// TestSQL_LimitPlusParameterIsNotReprepared proves the premise on the
// driver this module builds with, on a connection without fts.Index.Register's
// planner setting (which alone would also stop it): LIMIT ? re-prepares at
// every run, LIMIT +? never.
func TestSQL_LimitPlusParameterIsNotReprepared(t *testing.T) {
	_, c := storeWithPlainConn(t)
	limits := func(query string) int {
		return reprepares(t, c, query, func(s *sqlite3.Stmt, run int) error {
			return s.BindInt(1, []int{1, 2, 3, 1}[run])
		})
	}
	if n := limits(`SELECT seq FROM records ORDER BY seq LIMIT ?1`); n == 0 {
		t.Log("LIMIT ?1 is no longer re-prepared by this SQLite: LIMIT +? is harmless but no longer needed")
	}
	if n := limits(`SELECT seq FROM records ORDER BY seq LIMIT +?1`); n != 0 {
		t.Errorf("LIMIT +?1 was re-prepared %d times in 4 runs, want 0", n)
	}
}

// TestSQL_FTS5LookupIsNotReprepared: FTS5 looks a term up in a segment with
// a statement of its own whose plan SQLite would redo for each new binding;
// the stores' connections plan without bound values (fts.Index.Register), so it is
// prepared once. The premise is checked on a connection without that
// setting.
func TestSQL_FTS5LookupIsNotReprepared(t *testing.T) {
	ctx := context.Background()
	db, plain := storeWithPlainConn(t)
	const lookup = `SELECT pgno FROM 'main'.'records_fts_idx' WHERE segid=? AND term<=? ORDER BY term DESC LIMIT 1`
	terms := []string{"0retry", "0cache", "0webhook", "0deploy"}
	lookups := func(c *sqlite3.Conn) int {
		return reprepares(t, c, lookup, func(s *sqlite3.Stmt, run int) error {
			if err := s.BindInt(1, run+1); err != nil {
				return err
			}
			return s.BindBlob(2, []byte(terms[run]))
		})
	}
	for name, pool := range map[string]*sql.DB{"reader": db.lite.Reader(), "writer": db.lite.Writer(), "vocab": db.lite.Vocab()} {
		conn, err := pool.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := conn.Raw(func(dc any) error {
			n = lookups(dc.(interface{ Raw() *sqlite3.Conn }).Raw())
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		conn.Close()
		if n != 0 {
			t.Errorf("%s: the lookup was prepared again %d times in 4 runs, want 0", name, n)
		}
	}
	if n := lookups(plain); n == 0 {
		t.Log("this SQLite no longer prepares the lookup again without the guarantee: fts.Index.Register's setting is harmless but no longer needed")
	}
}

// storeWithPlainConn opens a store in a temporary directory and a plain
// connection to its file, without the store's connection setup (fts.Index.Register):
// where a premise about SQLite itself is checked. Both close with the test.
func storeWithPlainConn(t *testing.T) (*DB, *sqlite3.Conn) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hearth.db")
	db, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c, err := sqlite3.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return db, c
}

// reprepares runs query on c four times, binding each run's values with
// bind, and returns how often SQLite prepared it again meanwhile.
func reprepares(t *testing.T, c *sqlite3.Conn, query string, bind func(s *sqlite3.Stmt, run int) error) int {
	t.Helper()
	s, _, err := c.Prepare(query)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for run := range 4 {
		if err := bind(s, run); err != nil {
			t.Fatal(err)
		}
		for s.Step() {
		}
		if err := s.Reset(); err != nil {
			t.Fatal(err)
		}
	}
	return s.Status(sqlite3.STMTSTATUS_REPREPARE, false)
}
