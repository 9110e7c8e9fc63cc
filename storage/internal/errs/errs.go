// Package errs holds the codes of the errors the store returns, shared by
// the storage package and the engine below it: the engine refuses a write
// with an *Error (a full disk, a damaged file, a bad argument), and
// storage gives it to its callers as its own Error with the same code
// (docs/design.md, "Storage layout").
package errs

import (
	"errors"
	"fmt"
)

// Code classifies a storage error. The server maps each code to a gRPC status
// in one place; every error that is not an *Error counts as Internal.
type Code string

// The error codes storage returns.
const (
	// Invalid: the request breaks a rule (a bad enum value, an empty title, a
	// refused supersession, a change to a deleted record).
	Invalid Code = "invalid"
	// NotFound: a record named by the request does not exist.
	NotFound Code = "not_found"
	// Conflict: the revision given is stale; Error.Current holds the record
	// as it stands.
	Conflict Code = "conflict"
	// Exists: a row with the same key already exists.
	Exists Code = "exists"
	// Expired: what the request names is past its retention, such as a
	// session receipt that became a tombstone.
	Expired Code = "expired"
	// Full: the disk holding the database is full, so the write was not
	// made; writes succeed again once space is freed.
	Full Code = "full"
	// ReadOnly: the database file is damaged, so the store refuses every
	// write until it is restored.
	ReadOnly Code = "read_only"
	// Internal: anything else (I/O, driver, bugs). Its message is not for clients.
	Internal Code = "internal"
)

// Error is an error below the record domain with a Code: storage turns it
// into its own Error, which may also carry a record.
type Error struct {
	Code    Code
	Field   string
	Message string
}

// Error returns "field: message", or the message alone when no field is named.
func (e *Error) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// Errorf returns an *Error with a formatted message.
func Errorf(code Code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Wrap names op in an error of the driver, as storage does with its own,
// for the packages below the record domain whose statements cannot break a
// unique key: nil stays nil and an *Error passes as it is.
func Wrap(op string, err error) error {
	var e *Error
	if err == nil || errors.As(err, &e) {
		return err
	}
	return fmt.Errorf("storage: %s: %w", op, err)
}
