package gateway

import (
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-openapiv2/options"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
)

// MaxBodyBytes is the largest request body accepted (docs/design.md R-Q2), 1 MiB.
const MaxBodyBytes = 1 << 20

// BodyReadTimeout bounds how long a POST body may take to arrive.
const BodyReadTimeout = 30 * time.Second

// Boundary applies the request rules of docs/design.md §3 before next runs, without
// reading the body:
//
//   - any request with an Origin header gets 403 PERMISSION_DENIED (R-Q1):
//     only browsers send one, and no browser page may drive the API;
//   - a POST whose Content-Type is not application/json (parameters such as
//     charset allowed) gets 415;
//   - a POST without a Content-Length header (chunked, an HTTP/1.1 request
//     with no length at all, which net/http reads as empty, or an HTTP/2
//     request that omits it) gets 400; a malformed Content-Length never gets
//     here, since net/http refuses it with its own plain-text 400;
//   - a Content-Length over MaxBodyBytes gets 413 RESOURCE_EXHAUSTED, the
//     code gRPC gives an oversized message (R-Q3);
//   - a POST body must arrive within BodyReadTimeout, so a client that
//     announces a length and stalls does not hold its connection forever.
//
// Every body is also wrapped in http.MaxBytesReader, so nothing reads past
// the limit whatever the headers said. Error bodies are ErrorJSON with
// http_status equal to the status sent.
func Boundary(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Header["Origin"]; ok {
			WriteError(w, status.Error(codes.PermissionDenied, "requests from browsers (with an Origin header) are refused"))
			return
		}
		if r.Method == http.MethodPost {
			if mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mediaType != "application/json" {
				WriteError(w, &HTTPError{
					Status:  http.StatusUnsupportedMediaType,
					Code:    codes.InvalidArgument,
					Message: "Content-Type must be application/json",
				})
				return
			}
			// net/http reads an HTTP/1.1 request with no length at all as
			// an empty body: only the missing header tells it apart.
			if r.ContentLength < 0 || (r.ContentLength == 0 && len(r.Header.Values("Content-Length")) == 0) {
				WriteError(w, status.Error(codes.InvalidArgument, "Content-Length is required (chunked bodies are refused)"))
				return
			}
			if r.ContentLength > MaxBodyBytes {
				WriteError(w, TooLarge())
				return
			}
			// Not every ResponseWriter supports deadlines; then the server's
			// own timeouts are all there is.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(BodyReadTimeout))
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		}
		next.ServeHTTP(w, r)
	})
}

// TooLarge is the error for a body over MaxBodyBytes: 413 RESOURCE_EXHAUSTED.
// Such a body is nearly always a note far past a record's limit (a file, a
// log, a transcript), so the message names that limit and what to do.
func TooLarge() error {
	return &HTTPError{
		Status:  http.StatusRequestEntityTooLarge,
		Code:    codes.ResourceExhausted,
		Message: tooLargeMessage,
	}
}

// tooLargeMessage is TooLarge's message, with the content limit of
// memory_store from the proto (the x-max-bytes the validator enforces).
var tooLargeMessage = fmt.Sprintf("request body is larger than 1 MiB (%d bytes); a record's content holds at most %s bytes: "+
	"store one fact per record, split a long note into several, and leave files, logs and transcripts where they are "+
	"(a path: anchor can point at one)", MaxBodyBytes, thousands(contentMaxBytes()))

// contentMaxBytes is memory_store's content limit in bytes (x-max-bytes).
func contentMaxBytes() int {
	fd := (&hearthv1.StoreRequest{}).ProtoReflect().Descriptor().Fields().ByName("content")
	o, _ := proto.GetExtension(fd.Options(), options.E_Openapiv2Field).(*options.JSONSchema)
	return int(o.GetExtensions()["x-max-bytes"].GetNumberValue())
}

// thousands writes n with commas: 6000 is 6,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
