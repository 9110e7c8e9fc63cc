package errs

import (
	"errors"
	"fmt"

	"github.com/ncruces/go-sqlite3"
)

// StateUnique is PostgreSQL's unique_violation (a primary key too), the
// SQLSTATE Taken reads as Exists.
const StateUnique = "23505"

// Taken reports whether err is an engine's refusal of a row whose key
// another row holds: SQLite's UNIQUE or PRIMARY KEY constraint, or
// PostgreSQL's unique_violation (read through pgx's SQLState, without
// naming the driver's types). Storage gives it as Exists.
func Taken(err error) bool {
	if errors.Is(err, sqlite3.CONSTRAINT_UNIQUE) || errors.Is(err, sqlite3.CONSTRAINT_PRIMARYKEY) {
		return true
	}
	var s interface{ SQLState() string }
	return errors.As(err, &s) && s.SQLState() == StateUnique
}

// Classify is, for the packages below the record domain, what storage's
// classify is for the domain: a driver error whose code says a row with the
// same key exists (Taken) becomes Exists (never its message), an *Error
// passes as it is, and anything else is wrapped as an internal error
// naming op.
func Classify(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case Taken(err):
		return &Error{Code: Exists, Message: "already exists"}
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return fmt.Errorf("storage: %s: %w", op, err)
}
