package gateway_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	rpccode "google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hearth-memory/hearth/gateway"
	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
)

// specStatus is the table of docs/design.md R-T10 and R-A2 as literals: every gRPC code
// and the HTTP status a REST caller sees.
var specStatus = map[codes.Code]int{
	codes.OK:                 200,
	codes.Canceled:           499,
	codes.Unknown:            500,
	codes.InvalidArgument:    400,
	codes.DeadlineExceeded:   504,
	codes.NotFound:           404,
	codes.AlreadyExists:      409,
	codes.PermissionDenied:   403,
	codes.ResourceExhausted:  429,
	codes.FailedPrecondition: 400,
	codes.Aborted:            409,
	codes.OutOfRange:         400,
	codes.Unimplemented:      501,
	codes.Internal:           500,
	codes.Unavailable:        503,
	codes.DataLoss:           500,
	codes.Unauthenticated:    401,
}

func TestHTTPStatus(t *testing.T) {
	t.Parallel()
	for c := codes.Code(0); c <= 16; c++ {
		want, ok := specStatus[c]
		if !ok {
			t.Fatalf("code %v missing from the spec table", c)
		}
		if got := gateway.HTTPStatus(c, hearthv1.Reason_REASON_UNSPECIFIED); got != want {
			t.Errorf("HTTPStatus(%v) = %d, want %d", c, got, want)
		}
		if got, rt := gateway.HTTPStatus(c, hearthv1.Reason_REASON_UNSPECIFIED), runtime.HTTPStatusFromCode(c); got != rt {
			t.Errorf("HTTPStatus(%v) = %d, grpc-gateway says %d", c, got, rt)
		}
		// The reason matters only where an exception names it.
		if c != codes.FailedPrecondition {
			if got := gateway.HTTPStatus(c, hearthv1.Reason_REASON_EXPIRED); got != want {
				t.Errorf("HTTPStatus(%v, expired) = %d, want %d", c, got, want)
			}
			if got := gateway.HTTPStatus(c, hearthv1.Reason_REASON_READ_ONLY); got != want {
				t.Errorf("HTTPStatus(%v, read_only) = %d, want %d", c, got, want)
			}
		}
		if c != codes.ResourceExhausted {
			if got := gateway.HTTPStatus(c, hearthv1.Reason_REASON_DISK_FULL); got != want {
				t.Errorf("HTTPStatus(%v, disk_full) = %d, want %d", c, got, want)
			}
		}
		if got := gateway.HTTPStatus(c, hearthv1.Reason(42)); got != want {
			t.Errorf("HTTPStatus(%v, reason 42) = %d, want %d", c, got, want)
		}
	}
	if got := gateway.HTTPStatus(codes.Code(99), hearthv1.Reason_REASON_UNSPECIFIED); got != 500 {
		t.Errorf("HTTPStatus(99) = %d, want 500", got)
	}
}

// TestHTTPStatus_Exceptions holds the table's exceptions, each with the
// requirement that asks for it.
func TestHTTPStatus_Exceptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		code   codes.Code
		reason hearthv1.Reason
		want   int
	}{
		// R-Z2: a replayed session close whose receipt expired is 410 Gone.
		{"ExpiredReceipt", codes.FailedPrecondition, hearthv1.Reason_REASON_EXPIRED, 410},
		{"FailedPreconditionNoReason", codes.FailedPrecondition, hearthv1.Reason_REASON_UNSPECIFIED, 400},
		// Issue #21: a write refused for a full disk is 507 Insufficient
		// Storage; one refused because the file is damaged (read-only) is
		// 503. Without the reason, the table's 429 and 400 stand.
		{"DiskFull", codes.ResourceExhausted, hearthv1.Reason_REASON_DISK_FULL, 507},
		{"ResourceExhaustedNoReason", codes.ResourceExhausted, hearthv1.Reason_REASON_UNSPECIFIED, 429},
		{"ReadOnly", codes.FailedPrecondition, hearthv1.Reason_REASON_READ_ONLY, 503},
		{"DiskFullReasonOnOtherCode", codes.FailedPrecondition, hearthv1.Reason_REASON_DISK_FULL, 400},
		{"UnknownReason", codes.FailedPrecondition, hearthv1.Reason(7), 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := gateway.HTTPStatus(tt.code, tt.reason); got != tt.want {
				t.Errorf("HTTPStatus(%v, %v) = %d, want %d", tt.code, tt.reason, got, tt.want)
			}
		})
	}
}

// TestReasonName holds the JSON spelling of every declared reason: lower
// case, no prefix; nothing for none or an undeclared number.
func TestReasonName(t *testing.T) {
	t.Parallel()
	for n, name := range hearthv1.Reason_name {
		r := hearthv1.Reason(n)
		want := strings.ToLower(strings.TrimPrefix(name, "REASON_"))
		if r == hearthv1.Reason_REASON_UNSPECIFIED {
			want = ""
		}
		if got := gateway.ReasonName(r); got != want {
			t.Errorf("ReasonName(%v) = %q, want %q", r, got, want)
		}
	}
	if got := gateway.ReasonName(hearthv1.Reason_REASON_EXPIRED); got != "expired" {
		t.Errorf("ReasonName(REASON_EXPIRED) = %q, want expired (R-Z2's body)", got)
	}
	if got := gateway.ReasonName(hearthv1.Reason(99)); got != "" {
		t.Errorf("ReasonName(99) = %q, want \"\"", got)
	}
}

func TestCodeName(t *testing.T) {
	t.Parallel()
	// codes.Code.String() gives e.g. "InvalidArgument" and "Canceled"; the
	// body uses google.rpc.Code's names.
	if got := codes.InvalidArgument.String(); got != "InvalidArgument" {
		t.Fatalf("codes.InvalidArgument.String() = %q; the premise of CodeName changed", got)
	}
	for c := codes.Code(0); c <= 16; c++ {
		if got, want := gateway.CodeName(c), rpccode.Code_name[int32(c)]; got != want {
			t.Errorf("CodeName(%d) = %q, want %q (google.rpc.Code)", c, got, want)
		}
	}
	if got := gateway.CodeName(codes.Code(99)); got != "UNKNOWN" {
		t.Errorf("CodeName(99) = %q, want UNKNOWN", got)
	}
}

// errorBody decodes an error body strictly into the ErrorResponse message.
func errorBody(t *testing.T, body []byte) *hearthv1.Error {
	t.Helper()
	var resp hearthv1.ErrorResponse
	if err := protojson.Unmarshal(body, &resp); err != nil {
		t.Fatalf("error body %s: %v", body, err)
	}
	if resp.GetError() == nil {
		t.Fatalf("error body %s has no error", body)
	}
	return resp.GetError()
}

func TestErrorJSON(t *testing.T) {
	t.Parallel()
	record := &hearthv1.Record{Id: "01J0000000000000000000000A", Revision: 3, Title: "t", CreatedAt: timestamppb.New(timestamppb.Now().AsTime())}
	conflict, err := status.New(codes.Aborted, "revision 2 is not current").WithDetails(&hearthv1.ErrorDetail{CurrentRevision: 3, Record: record})
	if err != nil {
		t.Fatal(err)
	}
	expired, err := status.New(codes.FailedPrecondition, "op_id: the receipt has expired").WithDetails(&hearthv1.ErrorDetail{Field: "op_id", Reason: hearthv1.Reason_REASON_EXPIRED})
	if err != nil {
		t.Fatal(err)
	}
	screened, err := status.New(codes.InvalidArgument, "content looks like a secret").WithDetails(&hearthv1.ErrorDetail{Field: "content", Pattern: "aws-access-key"})
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		err        error
		wantStatus int
		want       *hearthv1.Error
	}{
		{"Conflict", conflict.Err(), 409, &hearthv1.Error{Code: "ABORTED", HttpStatus: 409, Message: "revision 2 is not current", CurrentRevision: proto.Uint32(3), Record: record}},
		{"Screened", screened.Err(), 400, &hearthv1.Error{Code: "INVALID_ARGUMENT", HttpStatus: 400, Message: "content looks like a secret", Field: proto.String("content"), Pattern: proto.String("aws-access-key")}},
		{"Expired", expired.Err(), 410, &hearthv1.Error{Code: "FAILED_PRECONDITION", HttpStatus: 410, Message: "op_id: the receipt has expired", Field: proto.String("op_id"), Reason: proto.String("expired")}},
		{"FailedPrecondition", status.Error(codes.FailedPrecondition, "not now"), 400, &hearthv1.Error{Code: "FAILED_PRECONDITION", HttpStatus: 400, Message: "not now"}},
		{"Unauthenticated", status.Error(codes.Unauthenticated, "unknown caller"), 401, &hearthv1.Error{Code: "UNAUTHENTICATED", HttpStatus: 401, Message: "unknown caller"}},
		{"Canceled", status.Error(codes.Canceled, "context canceled"), 499, &hearthv1.Error{Code: "CANCELLED", HttpStatus: 499, Message: "context canceled"}},
		{"WrappedStatus", fmt.Errorf("call: %w", status.Error(codes.NotFound, "no record")), 404, &hearthv1.Error{Code: "NOT_FOUND", HttpStatus: 404, Message: "no record"}},
		{"UnknownCode", status.Error(codes.Code(99), "odd"), 500, &hearthv1.Error{Code: "UNKNOWN", HttpStatus: 500, Message: "odd"}},
		{"PlainError", errors.New("disk full at /secret/path"), 500, &hearthv1.Error{Code: "INTERNAL", HttpStatus: 500, Message: "internal error"}},
		{"Nil", nil, 500, &hearthv1.Error{Code: "INTERNAL", HttpStatus: 500, Message: "internal error"}},
		{"HTTPError", &gateway.HTTPError{Status: 413, Code: codes.ResourceExhausted, Message: "too big"}, 413, &hearthv1.Error{Code: "RESOURCE_EXHAUSTED", HttpStatus: 413, Message: "too big"}},
		{"WrappedHTTPError", fmt.Errorf("x: %w", &gateway.HTTPError{Status: 415, Code: codes.InvalidArgument, Message: "json only"}), 415, &hearthv1.Error{Code: "INVALID_ARGUMENT", HttpStatus: 415, Message: "json only"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotStatus, body := gateway.ErrorJSON(tt.err)
			if gotStatus != tt.wantStatus {
				t.Errorf("status = %d, want %d", gotStatus, tt.wantStatus)
			}
			if got := errorBody(t, body); !proto.Equal(got, tt.want) {
				t.Errorf("body = %v, want %v", got, tt.want)
			}
		})
	}

	t.Run("Shape", func(t *testing.T) {
		// code, http_status and message are always there, in proto names,
		// with numbers as JSON numbers; the fields that do not apply to an
		// error (field, pattern, current_revision, record, reason) are
		// absent, not empty.
		_, body := gateway.ErrorJSON(status.Error(codes.NotFound, "no record"))
		var got map[string]map[string]any
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		e := got["error"]
		for _, key := range []string{"code", "http_status", "message"} {
			if _, ok := e[key]; !ok {
				t.Errorf("key %q missing from %s", key, body)
			}
		}
		for _, key := range []string{"field", "pattern", "current_revision", "record", "reason"} {
			if _, ok := e[key]; ok {
				t.Errorf("key %q present in %s, though it does not apply", key, body)
			}
		}
		_, body = gateway.ErrorJSON(screened.Err())
		var screenedBody map[string]map[string]any
		if err := json.Unmarshal(body, &screenedBody); err != nil {
			t.Fatal(err)
		}
		if e := screenedBody["error"]; e["field"] != "content" || e["pattern"] != "aws-access-key" || e["reason"] != nil || e["current_revision"] != nil {
			t.Errorf("a screened value's error = %s, want field and pattern alone", body)
		}
		if n, ok := e["http_status"].(float64); !ok || n != 404 {
			t.Errorf("http_status = %#v, want the number 404", e["http_status"])
		}
	})
}

func TestWriteError(t *testing.T) {
	t.Parallel()
	t.Run("Unauthenticated", func(t *testing.T) {
		rec := httptest.NewRecorder()
		gateway.WriteError(rec, status.Error(codes.Unauthenticated, "unknown caller"))
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("status = %d, want 401", rec.Code)
		}
		if got := rec.Header().Get("WWW-Authenticate"); got == "" {
			t.Error("no WWW-Authenticate challenge")
		}
		if got := rec.Header().Get("Content-Type"); got != "application/json" {
			t.Errorf("Content-Type = %q", got)
		}
		if e := errorBody(t, rec.Body.Bytes()); e.GetHttpStatus() != 401 {
			t.Errorf("http_status = %d", e.GetHttpStatus())
		}
	})
}
