package pgengine

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"testing"
)

// This package's tests link no driver (they import neither pgx nor
// pgtest): Open says the build lacks it, before it reads the URL.
func TestOpen_NoDriver(t *testing.T) {
	t.Parallel()
	if slices.Contains(sql.Drivers(), Driver) {
		t.Skip("the test binary links the driver")
	}
	_, err := Open(context.Background(), "postgres://hearth:pw@127.0.0.1:1/hearth", Config{})
	if !errors.Is(err, errNoDriver) {
		t.Fatalf("Open without the driver: %v, want %v", err, errNoDriver)
	}
}

// The Dialect rebinds placeholders once per statement and stores a bool
// as the 0/1 of a flag column, leaving every other argument, and the
// caller's slice, as they were.
func TestRebinder(t *testing.T) {
	t.Parallel()
	r := &rebinder{m: map[string]string{}}
	if got := r.SQL(`SELECT ?2, ?, '?' FROM t WHERE a = ?1`); got != `SELECT $2, $3, '?' FROM t WHERE a = $1` {
		t.Errorf("SQL = %q", got)
	}
	if len(r.m) != 1 {
		t.Errorf("cache holds %d statements, want 1", len(r.m))
	}
	// A statement Rebind refuses goes as it is: PostgreSQL names its fault.
	if got := r.SQL(`SELECT $1`); got != `SELECT $1` {
		t.Errorf("refused statement became %q", got)
	}
	in := []any{true, false, int64(7), "x", nil}
	got := r.Args(in)
	if want := []any{int64(1), int64(0), int64(7), "x", nil}; !slices.Equal(got, want) {
		t.Errorf("Args = %#v, want %#v", got, want)
	}
	if in[0] != true {
		t.Error("Args changed the caller's slice")
	}
	plain := []any{int64(1), "y"}
	if out := r.Args(plain); &out[0] != &plain[0] {
		t.Error("Args copied arguments that hold no bool")
	}
}

// Serialization failures and deadlocks are run again; a full disk is Full;
// anything else is left as it is.
func TestErrors(t *testing.T) {
	t.Parallel()
	for state, retry := range map[string]bool{"40001": true, "40P01": true, "23505": false, "53100": false, "": false} {
		if got := retryable(stateErr(state)); got != retry {
			t.Errorf("retryable(%q) = %v, want %v", state, got, retry)
		}
	}
	if err := classify("store", stateErr("53100")); err.Error() != "store: the disk holding the PostgreSQL database is full: the write was not made" {
		t.Errorf("classify(53100) = %v", err)
	}
	if e := stateErr("23505"); classify("store", e) != e {
		t.Error("classify changed a unique violation")
	}
}

type stateErr string

func (e stateErr) Error() string    { return "state " + string(e) }
func (e stateErr) SQLState() string { return string(e) }
