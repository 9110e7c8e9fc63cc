package gateway

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	rpccode "google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
)

// HTTPStatus returns the HTTP status that answers a call failing with code
// and the reason of its hearth.v1.ErrorDetail (REASON_UNSPECIFIED when it
// has none).
//
// It is the one mapping from gRPC codes to HTTP statuses, used by REST
// replies and by the http_status field of every error body (MCP included):
// grpc-gateway's runtime.HTTPStatusFromCode (FAILED_PRECONDITION is 400,
// deliberately not 412, which is about HTTP conditional headers; codes
// outside 0..16 answer 500) and the exceptions below.
//
// Exceptions to the table belong here, as explicit cases before the switch,
// each with the requirement that asks for it.
func HTTPStatus(code codes.Code, reason hearthv1.Reason) int {
	// R-Z2: replaying a session close whose receipt has expired is refused
	// as FAILED_PRECONDITION, answered 410 Gone.
	if code == codes.FailedPrecondition && reason == hearthv1.Reason_REASON_EXPIRED {
		return 410
	}
	// Issue #21: a write refused because the disk holding the database is
	// full is RESOURCE_EXHAUSTED, answered 507 Insufficient Storage (not
	// 429, which tells a client to slow down and retry).
	if code == codes.ResourceExhausted && reason == hearthv1.Reason_REASON_DISK_FULL {
		return 507
	}
	// Issue #21: a write refused because the database file is damaged is
	// FAILED_PRECONDITION (gRPC clients and retry policies must not retry
	// it: only restoring a backup helps), answered 503 Service Unavailable
	// (the server cannot take writes; not 400, the request was not bad).
	if code == codes.FailedPrecondition && reason == hearthv1.Reason_REASON_READ_ONLY {
		return 503
	}
	return runtime.HTTPStatusFromCode(code)
}

// CodeName returns the canonical upper-snake name of code as google.rpc.Code
// spells it (code.Code's enum name), e.g. INVALID_ARGUMENT or CANCELLED,
// where codes.Code.String() says InvalidArgument and Canceled. Codes
// outside 0..16 are named UNKNOWN.
func CodeName(c codes.Code) string {
	if n, ok := rpccode.Code_name[int32(c)]; ok {
		return n
	}
	return rpccode.Code_UNKNOWN.String()
}

// ReasonName returns how the JSON error body spells reason: its enum name in
// lower case without the REASON_ prefix (REASON_EXPIRED is "expired"), and
// "" for REASON_UNSPECIFIED or a number the enum does not name.
func ReasonName(reason hearthv1.Reason) string {
	if reason == hearthv1.Reason_REASON_UNSPECIFIED {
		return ""
	}
	v := reason.Descriptor().Values().ByNumber(protoreflect.EnumNumber(reason))
	if v == nil {
		return ""
	}
	return strings.ToLower(strings.TrimPrefix(string(v.Name()), "REASON_"))
}

// HTTPError is a failure that the HTTP layer answers itself, with a status
// outside the gRPC code table: 413 or 415 at the request boundary, 405 for a
// wrong method. ErrorJSON renders it like any other error, with http_status
// equal to Status.
type HTTPError struct {
	// Status is the HTTP status sent.
	Status int
	// Code is the gRPC code named in the body.
	Code codes.Code
	// Message is shown to the caller.
	Message string
}

// Error returns the message.
func (e *HTTPError) Error() string { return e.Message }

// grpcStatus is implemented by the errors of package status.
type grpcStatus interface {
	error
	GRPCStatus() *status.Status
}

// internalMessage replaces the text of an error that is not a gRPC status:
// such an error never reached the server's error mapping, and its text may
// carry anything.
const internalMessage = "internal error"

// fallbackBody is sent if an error body cannot be marshaled, which only a
// broken build can cause.
const fallbackBody = `{"error":{"code":"INTERNAL","http_status":500,"message":"internal error"}}`

// ErrorJSON renders err as the JSON error body shared by REST and MCP, a
// hearth.v1.ErrorResponse, and returns the HTTP status that goes with it.
//
// A gRPC status supplies code and message; the first hearth.v1.ErrorDetail in
// its details supplies field, pattern, current_revision, record and reason
// (which HTTPStatus reads with the code). An
// *HTTPError supplies its own status, code and message. Any other error, and a
// nil one, becomes INTERNAL with a fixed message. http_status always equals
// the returned status.
func ErrorJSON(err error) (httpStatus int, body []byte) {
	e := &hearthv1.Error{}
	var herr *HTTPError
	switch {
	case errors.As(err, &herr):
		e.Code = CodeName(herr.Code)
		e.Message = herr.Message
		httpStatus = herr.Status
	default:
		// status.FromError would use the whole wrapped text as the message;
		// the innermost status's own message is the one meant for callers.
		st := status.New(codes.Internal, internalMessage)
		if se, ok := errors.AsType[grpcStatus](err); ok {
			if s := se.GRPCStatus(); s != nil && s.Code() != codes.OK {
				st = s
			}
		}
		e.Code = CodeName(st.Code())
		e.Message = st.Message()
		reason := hearthv1.Reason_REASON_UNSPECIFIED
		for _, d := range st.Details() {
			if detail, ok := d.(*hearthv1.ErrorDetail); ok {
				// Only the fields that apply are set: an unset optional
				// field stays out of the JSON.
				if v := detail.GetField(); v != "" {
					e.Field = &v
				}
				if v := detail.GetPattern(); v != "" {
					e.Pattern = &v
				}
				if v := detail.GetCurrentRevision(); v != 0 {
					e.CurrentRevision = &v
				}
				e.Record = detail.GetRecord()
				reason = detail.GetReason()
				if v := ReasonName(reason); v != "" {
					e.Reason = &v
				}
				break
			}
		}
		httpStatus = HTTPStatus(st.Code(), reason)
	}
	e.HttpStatus = uint32(httpStatus)
	body, merr := marshalOptions.Marshal(&hearthv1.ErrorResponse{Error: e})
	if merr != nil {
		return http.StatusInternalServerError, []byte(fallbackBody)
	}
	return httpStatus, body
}

// WriteError answers an HTTP request with ErrorJSON(err): the status, the
// JSON body, and for 401 a WWW-Authenticate challenge for a bearer token.
func WriteError(w http.ResponseWriter, err error) {
	code, body := ErrorJSON(err)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	if code == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="hearth"`)
	}
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
