package pgschema_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/storage/internal/pgtest"
)

// json_each(text) answers as SQLite's json_each does for the domain's
// arrays, whichever way the argument comes: a parameter (the domain's
// json_each(?)), a literal, a text column. PostgreSQL's own json_each(json)
// still answers a json argument.
func TestJSONEach_Resolution(t *testing.T) {
	t.Parallel()
	db := pgtest.Open(t)
	list := `["b", "a", 12, null, {"r": "01X", "t": 5}]`
	want := [][]string{{"0", "b"}, {"1", "a"}, {"2", "12"}, {"3", ""}, {"4", `{"r": "01X", "t": 5}`}}
	for name, q := range map[string]string{
		"parameter": `SELECT key, value FROM json_each($1) ORDER BY key`,
		"literal":   fmt.Sprintf(`SELECT key, value FROM json_each('%s') ORDER BY key`, list),
		"column":    `SELECT key, value FROM (SELECT $1::text COLLATE "C" AS l) AS c, json_each(c.l) ORDER BY key`,
	} {
		var got [][]string
		if name == "literal" {
			got = query(t, db, q)
		} else {
			got = query(t, db, q, list)
		}
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("%s: %s = %q, want %q", name, q, got, want)
		}
	}
	// The domain's forms: IN over the values, a number cast, NULL.
	if got := query(t, db, `SELECT 'a' IN (SELECT value FROM json_each($1)), `+
		`12 IN (SELECT CAST(value AS BIGINT) FROM json_each($2)), `+
		`(SELECT count(*) FROM json_each(NULL))`, `["a"]`, `[12]`); !slices.Equal(got[0], []string{"true", "true", "0"}) {
		t.Errorf("IN, cast and NULL: %q", got)
	}
	// ->> on text: a field as text, NULL when missing.
	if got := query(t, db, `SELECT value ->> 'r', value ->> 't', coalesce(value ->> 'x', 'missing') FROM json_each($1)`,
		`[{"r": "01X", "t": 5}]`); !slices.Equal(got[0], []string{"01X", "5", "missing"}) {
		t.Errorf("->>: %q", got)
	}
	// PostgreSQL's own, for json.
	if got := query(t, db, `SELECT key, value::text FROM json_each($1::json)`, `{"k": 1}`); !slices.Equal(got[0], []string{"k", "1"}) {
		t.Errorf("json_each(json) = %q, want PostgreSQL's own", got)
	}
}

// A short list joined to records by json_each is read by looking each
// element up by its key, as Search reads its hits, not by hashing every
// record (0005): the planner expects a list of 10 rows, not 1,000.
func TestJSONEach_ShortListLooksUp(t *testing.T) {
	t.Parallel()
	db := pgtest.Open(t)
	if _, err := db.Exec(`INSERT INTO records (id, namespace, type, title, content, status, revision, writer,
			confidence, effective_confidence, source, created_at, updated_at)
		SELECT lpad(g::text, 26, '0'), 'n', 'note', 'title ' || g, 'content ' || g, 'active', 1, 'test', 0.8, 0.8, 'store', 1000, 1000
		FROM generate_series(1, 5000) AS g`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`ANALYZE records`); err != nil {
		t.Fatal(err)
	}
	var plan string
	for _, r := range query(t, db, `EXPLAIN SELECT r.id FROM json_each($1) AS j CROSS JOIN records AS r
		WHERE r.seq = CAST(j.value AS BIGINT)`, `[12, 4000, 77]`) {
		plan += r[0] + "\n"
	}
	if !strings.Contains(plan, "Index Scan using records_pkey") || strings.Contains(plan, "Seq Scan on records") {
		t.Errorf("a list of three seqs joined to records:\n%s", plan)
	}
}
