package pgschema_test

import (
	"fmt"
	"slices"
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
