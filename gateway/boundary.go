package gateway

import (
	"mime"
	"net/http"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// MaxBodyBytes is the largest request body accepted (SPEC R-Q2), 1 MiB.
const MaxBodyBytes = 1 << 20

// BodyReadTimeout bounds how long a POST body may take to arrive.
const BodyReadTimeout = 30 * time.Second

// Boundary applies the request rules of SPEC §3 before next runs, without
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
func TooLarge() error {
	return &HTTPError{
		Status:  http.StatusRequestEntityTooLarge,
		Code:    codes.ResourceExhausted,
		Message: "request body is larger than 1 MiB",
	}
}
