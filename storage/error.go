package storage

import (
	"errors"
	"fmt"

	"github.com/ncruces/go-sqlite3"
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
	// made; writes succeed again once space is freed (diskfull.go).
	Full Code = "full"
	// ReadOnly: the database file is damaged, so the store refuses every
	// write until it is restored (integrity.go).
	ReadOnly Code = "read_only"
	// Internal: anything else (I/O, driver, bugs). Its message is not for clients.
	Internal Code = "internal"
)

// Error is the one error type storage returns for application errors. Field
// names the request field at fault (e.g. "changes.status") and Message says
// what is wrong; both are safe to show to callers. With Code Conflict, Current
// is the record at its current revision.
type Error struct {
	Code    Code
	Field   string
	Message string
	Current *Record
}

// Error returns "field: message", or the message alone when no field is named.
func (e *Error) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// ErrorCode returns the code of err: the Code of an *Error anywhere in its
// chain, "" for nil, and Internal for anything else.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// errorf returns an *Error with a formatted message.
func errorf(code Code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// classify turns a driver error into an *Error where its code says what
// happened (never its message), and otherwise wraps it as an internal error
// naming the operation.
func classify(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sqlite3.CONSTRAINT_UNIQUE), errors.Is(err, sqlite3.CONSTRAINT_PRIMARYKEY):
		return &Error{Code: Exists, Message: "already exists"}
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return fmt.Errorf("storage: %s: %w", op, err)
}

// conflict is the Conflict error for a stale revision.
func conflict(cur *Record, asked int) *Error {
	return &Error{
		Code:    Conflict,
		Field:   "revision",
		Message: fmt.Sprintf("revision %d is stale; the record is at revision %d", asked, cur.Revision),
		Current: cur,
	}
}
