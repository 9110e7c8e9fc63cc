package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestToStatus holds the one mapping from domain errors to gRPC codes:
// every storage code, screen refusals, field errors and unknown errors.
func TestToStatus(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cur := &storage.Record{ID: "01JD3M5ZK9Q8W7E6R5T4Y3X2V1", Revision: 4}
	cases := []struct {
		name      string
		err       error
		code      codes.Code
		field     string
		pattern   string
		revision  uint32
		msgAbsent string
		reason    hearthv1.Reason
	}{
		{"Invalid", &storage.Error{Code: storage.Invalid, Field: "supersedes", Message: "bad"}, codes.InvalidArgument, "supersedes", "", 0, "", 0},
		{"NotFound", &storage.Error{Code: storage.NotFound, Field: "id", Message: "no record"}, codes.NotFound, "id", "", 0, "", 0},
		{"Conflict", &storage.Error{Code: storage.Conflict, Field: "revision", Message: "stale", Current: cur}, codes.Aborted, "revision", "", 4, "", 0},
		{"Exists", &storage.Error{Code: storage.Exists, Field: "op_id", Message: "taken"}, codes.AlreadyExists, "op_id", "", 0, "", 0},
		{"Expired", &storage.Error{Code: storage.Expired, Field: "op_id", Message: "expired"}, codes.FailedPrecondition, "op_id", "", 0, "", hearthv1.Reason_REASON_EXPIRED},
		{"Full", &storage.Error{Code: storage.Full, Message: "the disk is full"}, codes.ResourceExhausted, "", "", 0, "", hearthv1.Reason_REASON_DISK_FULL},
		{"ReadOnly", &storage.Error{Code: storage.ReadOnly, Message: "damaged"}, codes.FailedPrecondition, "", "", 0, "", hearthv1.Reason_REASON_READ_ONLY},
		{"Internal", &storage.Error{Code: storage.Internal, Message: "disk on fire"}, codes.Internal, "", "", 0, "disk on fire", 0},
		{"Wrapped", errors.Join(errors.New("context"), &storage.Error{Code: storage.NotFound, Field: "id", Message: "x"}), codes.NotFound, "id", "", 0, "", 0},
		{"Screen", &screen.Refusal{Field: "content", Pattern: "jwt"}, codes.InvalidArgument, "content", "jwt", 0, "", 0},
		{"Field", invalid("limit", "must be at most %d", 50), codes.InvalidArgument, "limit", "", 0, "", 0},
		{"Unknown", errors.New("sql: something private"), codes.Internal, "", "", 0, "private", 0},
		{"Canceled", context.Canceled, codes.Canceled, "", "", 0, "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, ok := status.FromError(toStatus(context.Background(), log, c.err))
			if !ok || st.Code() != c.code {
				t.Fatalf("code = %v, want %v", st.Code(), c.code)
			}
			if c.msgAbsent != "" && strings.Contains(st.Message(), c.msgAbsent) {
				t.Errorf("message %q leaks the cause", st.Message())
			}
			var d *hearthv1.ErrorDetail
			for _, x := range st.Details() {
				if e, ok := x.(*hearthv1.ErrorDetail); ok {
					d = e
				}
			}
			if d.GetField() != c.field || d.GetPattern() != c.pattern || d.GetCurrentRevision() != c.revision || d.GetReason() != c.reason {
				t.Errorf("detail = %v, want field %q pattern %q revision %d reason %v", d, c.field, c.pattern, c.revision, c.reason)
			}
		})
	}
	// Every storage code has a mapping: a new code must be added here.
	for _, c := range []storage.Code{storage.Invalid, storage.NotFound, storage.Conflict, storage.Exists, storage.Expired, storage.Full, storage.ReadOnly, storage.Internal} {
		if _, ok := storageCodes[c]; !ok {
			t.Errorf("storage code %q has no gRPC code", c)
		}
	}
}

// TestNewToken_Screened keeps the token format and the screen's
// hearth-token pattern together: a generated token must never be storable.
func TestNewToken_Screened(t *testing.T) {
	for range 50 {
		tok, err := NewToken()
		if err != nil {
			t.Fatal(err)
		}
		_, err = screen.Check("content", "my token is "+tok)
		var ref *screen.Refusal
		if !errors.As(err, &ref) || ref.Pattern != "hearth-token" {
			t.Fatalf("a generated token passed the screen (err %v)", err)
		}
	}
}
