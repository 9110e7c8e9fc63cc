package storage

import (
	"errors"
	"fmt"

	"github.com/hearth-memory/hearth/storage/internal/errs"
)

// Code classifies a storage error. The server maps each code to a gRPC status
// in one place; every error that is not an *Error counts as Internal.
type Code = errs.Code

// The error codes storage returns (package errs says what each means).
const (
	Invalid  = errs.Invalid
	NotFound = errs.NotFound
	Conflict = errs.Conflict
	Exists   = errs.Exists
	Expired  = errs.Expired
	Full     = errs.Full
	ReadOnly = errs.ReadOnly
	Internal = errs.Internal
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
	var coded *errs.Error
	if errors.As(err, &coded) {
		return coded.Code
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
	case errs.Taken(err):
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
