// Package sqlval holds the forms the store's statements give values that
// SQL has no type for, shared by the root and the packages below it: a
// string list as the JSON array json_each(?) reads (docs/postgres.md, "The
// dialect": PostgreSQL's schema gives json_each(text) the same columns) and
// a time as the milliseconds its columns hold.
package sqlval

import (
	"database/sql"
	"encoding/json"
	"time"
)

// Strings encodes ss as the JSON array json_each(?) reads; nil is "null",
// which json_each reads as no rows.
func Strings(ss []string) string {
	b, _ := json.Marshal(ss) // a []string always marshals
	return string(b)
}

// Time converts a stored time (Unix milliseconds) back, in UTC; NULL is the
// zero time.
func Time(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.UnixMilli(v.Int64).UTC()
}
