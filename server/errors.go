package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/retrieval"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// fieldError is a request validation failure naming the field at fault.
type fieldError struct {
	field, msg string
}

func (e *fieldError) Error() string { return e.field + ": " + e.msg }

// invalid returns a validation error for field.
func invalid(field, format string, args ...any) error {
	return &fieldError{field: field, msg: fmt.Sprintf(format, args...)}
}

// storageCodes maps storage's error codes to gRPC codes. It is the one table
// from domain errors to transport codes; the transports derive the HTTP
// status and the code name from the gRPC code (and the detail's reason).
var storageCodes = map[storage.Code]codes.Code{
	storage.Invalid:  codes.InvalidArgument,
	storage.NotFound: codes.NotFound,
	storage.Conflict: codes.Aborted,
	storage.Exists:   codes.AlreadyExists,
	storage.Expired:  codes.FailedPrecondition, // with reason expired: 410 over HTTP (R-Z2)
	storage.Full:     codes.ResourceExhausted,  // with reason disk_full: 507 over HTTP (#21)
	storage.ReadOnly: codes.FailedPrecondition, // with reason read_only: 503 over HTTP (#21)
	storage.Internal: codes.Internal,
}

// storageReasons gives the ErrorDetail reason of the storage codes whose
// gRPC code alone does not say what happened.
var storageReasons = map[storage.Code]hearthv1.Reason{
	storage.Expired:  hearthv1.Reason_REASON_EXPIRED,
	storage.Full:     hearthv1.Reason_REASON_DISK_FULL,
	storage.ReadOnly: hearthv1.Reason_REASON_READ_ONLY,
}

// toStatus converts any error from validation, the screen or storage into a
// gRPC status error carrying a hearth.v1.ErrorDetail. Unknown errors become
// INTERNAL with a fixed message, and the cause is logged, never sent.
func toStatus(ctx context.Context, log *slog.Logger, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	var (
		fe  *fieldError
		ref *screen.Refusal
		se  *storage.Error
	)
	switch {
	case errors.As(err, &ref):
		return withDetail(codes.InvalidArgument, ref.Error(), &hearthv1.ErrorDetail{Field: ref.Field, Pattern: ref.Pattern})
	case errors.As(err, &fe):
		return withDetail(codes.InvalidArgument, fe.Error(), &hearthv1.ErrorDetail{Field: fe.field})
	case errors.As(err, &se) && se.Code != storage.Internal:
		c, ok := storageCodes[se.Code]
		if !ok {
			break
		}
		d := &hearthv1.ErrorDetail{Field: se.Field, Reason: storageReasons[se.Code]}
		msg := se.Message
		if se.Field != "" {
			msg = se.Field + ": " + msg
		}
		if se.Current != nil {
			d.CurrentRevision = uint32(se.Current.Revision)
			d.Record = recordToProto(se.Current)
		}
		return withDetail(c, msg, d)
	case errors.Is(err, retrieval.ErrUnavailable):
		// A ranking asked for by name (ranking: "cosine") that cannot be
		// given now: the request is valid, the server's state is not.
		return withDetail(codes.FailedPrecondition, "ranking: "+err.Error(), &hearthv1.ErrorDetail{Field: "ranking"})
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "canceled")
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "deadline exceeded")
	}
	log.ErrorContext(ctx, "internal error", "err", err)
	return status.Error(codes.Internal, "internal error")
}

func withDetail(c codes.Code, msg string, d *hearthv1.ErrorDetail) error {
	st := status.New(c, msg)
	if ds, err := st.WithDetails(d); err == nil {
		st = ds
	}
	return st.Err()
}
