package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
)

// registrations lists every service's gateway registration. New fails when
// the hearth.v1 descriptors hold a service missing here, so a new service
// cannot be forgotten.
var registrations = map[protoreflect.FullName]func(context.Context, *runtime.ServeMux, *grpc.ClientConn) error{
	"hearth.v1.MemoryService":  hearthv1.RegisterMemoryServiceHandler,
	"hearth.v1.AdminService":   hearthv1.RegisterAdminServiceHandler,
	"hearth.v1.SessionService": hearthv1.RegisterSessionServiceHandler,
}

// New returns the REST handler: a grpc-gateway ServeMux calling every
// hearth.v1 service over conn, so that each call passes the server's
// interceptors. The daemon mounts it at /api/ behind Boundary; paths are the
// full /api/<tool name>.
//
// Requests are decoded with DecodeRequest, responses encoded with
// MarshalResult and errors with ErrorJSON. The Authorization header reaches
// the server as `authorization` metadata, and the caller's address as the
// LAST entry of `x-forwarded-for` metadata (grpc-gateway appends it to any
// X-Forwarded-For the client sent, so only the last entry is trustworthy,
// and only on the in-process connection).
//
// ctx is handed to the generated registrations. New fails when the
// descriptors give no valid routes (see Routes) or a service has no
// registration.
func New(ctx context.Context, conn *grpc.ClientConn) (http.Handler, error) {
	routes, err := Routes()
	if err != nil {
		return nil, err
	}
	mux := runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, &jsonMarshaler{
			JSONPb: runtime.JSONPb{MarshalOptions: marshalOptions, UnmarshalOptions: unmarshalOptions},
		}),
		runtime.WithErrorHandler(errorHandler),
		runtime.WithRoutingErrorHandler(routingErrorHandler),
		runtime.WithWriteContentLength(),
		runtime.WithDisableHTTPMethodOverride(),
		runtime.WithDisablePathLengthFallback(),
	)
	registered := make(map[protoreflect.FullName]bool)
	byPath := make(map[string]protoreflect.MessageDescriptor, len(routes))
	for _, r := range routes {
		byPath[r.Path()] = r.Method.Input()
		service := r.Method.Parent().FullName()
		if registered[service] {
			continue
		}
		register, ok := registrations[service]
		if !ok {
			return nil, fmt.Errorf("gateway: service %s has no gateway registration", service)
		}
		if err := register(ctx, mux, conn); err != nil {
			return nil, fmt.Errorf("gateway: register %s: %w", service, err)
		}
		registered[service] = true
	}
	return &handler{mux: mux, inputs: byPath}, nil
}

// handler checks a request's JSON before the mux sees it. The generated
// gateway code flattens a decoding error into a bare message, losing the
// ErrorDetail that names the field; decoding first with DecodeRequest gives
// REST the same error body as MCP. The mux then decodes the same bytes with
// the same function, which cannot fail differently.
type handler struct {
	mux    *runtime.ServeMux
	inputs map[string]protoreflect.MessageDescriptor
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err != nil || host == "" {
		// grpc-gateway appends the remote host to X-Forwarded-For only when
		// it can parse one; otherwise the last entry would be the client's
		// own claim. Drop the claim so that the last entry, when there is
		// one, is always the gateway's.
		r.Header.Del("X-Forwarded-For")
	}
	input, ok := h.inputs[r.URL.Path]
	if !ok || r.Method != http.MethodPost || r.Body == nil {
		h.mux.ServeHTTP(w, r)
		return
	}
	// Boundary has already capped the body; cap it here as well so the
	// handler is safe on its own.
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		WriteError(w, readError(err))
		return
	}
	if err := DecodeRequest(data, newMessage(input)); err != nil {
		WriteError(w, err)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	h.mux.ServeHTTP(w, r)
}

// readError maps a failure to read a request body to an error body.
func readError(err error) error {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return tooLarge()
	}
	return status.Error(codes.InvalidArgument, "could not read the request body")
}

// jsonMarshaler is runtime.JSONPb with DecodeRequest as its decoder.
type jsonMarshaler struct {
	runtime.JSONPb
}

// NewDecoder returns a decoder that reads all of r and calls DecodeRequest.
func (m *jsonMarshaler) NewDecoder(r io.Reader) runtime.Decoder {
	return runtime.DecoderFunc(requestDecoder(r))
}

// errorHandler renders every failed call with ErrorJSON, including
// runtime.HTTPStatusError, which carries its own HTTP status.
func errorHandler(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, _ *http.Request, err error) {
	if herr, ok := errors.AsType[*runtime.HTTPStatusError](err); ok {
		st := status.Convert(herr.Err)
		err = &HTTPError{Status: herr.HTTPStatus, Code: st.Code(), Message: st.Message()}
	}
	WriteError(w, err)
}

// routingErrorHandler answers a request that matches no route.
func routingErrorHandler(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, httpStatus int) {
	switch httpStatus {
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", http.MethodPost)
		WriteError(w, &HTTPError{Status: httpStatus, Code: codes.Unimplemented, Message: "method not allowed: use POST"})
	case http.StatusNotFound:
		WriteError(w, status.Errorf(codes.NotFound, "no route %q: tools are POST /api/<tool name>", r.URL.Path))
	case http.StatusBadRequest:
		WriteError(w, status.Error(codes.InvalidArgument, "malformed request path"))
	default:
		WriteError(w, status.Error(codes.Internal, internalMessage))
	}
}
