package storage

import (
	"context"
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
// driver this module builds with: LIMIT ? re-prepares at every run, LIMIT +?
// never.
func TestSQL_LimitPlusParameterIsNotReprepared(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.reader.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	reprepares := func(query string) int {
		var n int
		if err := conn.Raw(func(dc any) error {
			c := dc.(interface{ Raw() *sqlite3.Conn }).Raw()
			s, _, err := c.Prepare(query)
			if err != nil {
				return err
			}
			defer s.Close()
			for _, limit := range []int{1, 2, 3, 1} {
				if err := s.BindInt(1, limit); err != nil {
					return err
				}
				for s.Step() {
				}
				if err := s.Reset(); err != nil {
					return err
				}
			}
			n = s.Status(sqlite3.STMTSTATUS_REPREPARE, false)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := reprepares(`SELECT seq FROM records ORDER BY seq LIMIT ?1`); n == 0 {
		t.Log("LIMIT ?1 is no longer re-prepared by this SQLite: LIMIT +? is harmless but no longer needed")
	}
	if n := reprepares(`SELECT seq FROM records ORDER BY seq LIMIT +?1`); n != 0 {
		t.Errorf("LIMIT +?1 was re-prepared %d times in 4 runs, want 0", n)
	}
}
