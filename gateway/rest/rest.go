// Package rest is the REST transport: every Hearth RPC as POST /api/<tool
// name>, served by grpc-gateway's runtime over a gRPC client connection, so
// that each call passes the server's authorization interceptor.
//
// Routes come from the shared descriptor walk (gateway.Routes); there is no
// per-service registration and no route file, so an RPC declared in the
// proto is a route. Each request body is decoded once, by
// gateway.DecodeRequest, and every reply and error is rendered by the
// shared contract, so a REST body equals the MCP tool result's text.
package rest

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/hearth-memory/hearth/gateway"
)

// New returns the REST handler: a grpc-gateway ServeMux with one route per
// RPC, calling it over conn. The daemon mounts it at /api/ behind
// gateway.Boundary; paths are the full /api/<tool name>.
//
// The Authorization header reaches the server as `authorization` metadata,
// and the caller's address as the LAST entry of `x-forwarded-for` metadata
// (grpc-gateway appends it to any X-Forwarded-For the client sent, so only
// the last entry is trustworthy, and only on the in-process channel).
//
// New fails when the descriptors give no valid routes (see gateway.Routes).
func New(conn grpc.ClientConnInterface) (http.Handler, error) {
	routes, err := gateway.Routes()
	if err != nil {
		return nil, err
	}
	mux := runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, marshaler{}),
		runtime.WithErrorHandler(errorHandler),
		runtime.WithRoutingErrorHandler(routingErrorHandler),
		runtime.WithWriteContentLength(),
		runtime.WithDisableHTTPMethodOverride(),
		runtime.WithDisablePathLengthFallback(),
	)
	for _, r := range routes {
		if err := mux.HandlePath(http.MethodPost, r.Path(), call(mux, conn, r)); err != nil {
			return nil, err
		}
	}
	return &handler{mux: mux}, nil
}

// call returns the handler of one route: decode the body once, invoke the
// RPC with the request's metadata, forward the reply.
func call(mux *runtime.ServeMux, conn grpc.ClientConnInterface, r gateway.Route) runtime.HandlerFunc {
	method, path := r.FullMethod(), r.Path()
	return func(w http.ResponseWriter, req *http.Request, _ map[string]string) {
		ctx, cancel := context.WithCancel(req.Context())
		defer cancel()
		_, out := runtime.MarshalerForRequest(mux, req)
		ctx, err := runtime.AnnotateContext(ctx, mux, req, method, runtime.WithHTTPPathPattern(path))
		if err != nil {
			runtime.HTTPError(ctx, mux, out, w, req, err)
			return
		}
		in := r.NewRequest()
		if err := decode(w, req, in); err != nil {
			runtime.HTTPError(ctx, mux, out, w, req, err)
			return
		}
		var md runtime.ServerMetadata
		resp := r.NewResponse()
		err = conn.Invoke(ctx, method, in, resp, grpc.Header(&md.HeaderMD), grpc.Trailer(&md.TrailerMD))
		ctx = runtime.NewServerMetadataContext(ctx, md)
		if err != nil {
			runtime.HTTPError(ctx, mux, out, w, req, err)
			return
		}
		runtime.ForwardResponseMessage(ctx, mux, out, w, req, resp, mux.GetForwardResponseOptions()...)
	}
}

// decode reads the request body, bounded by gateway.MaxBodyBytes (Boundary
// has already capped it; capping here keeps the handler safe on its own),
// and decodes it into in with gateway.DecodeRequest.
func decode(w http.ResponseWriter, req *http.Request, in proto.Message) error {
	var data []byte
	if req.Body != nil {
		var err error
		if data, err = io.ReadAll(http.MaxBytesReader(w, req.Body, gateway.MaxBodyBytes)); err != nil {
			return readError(err)
		}
	}
	return gateway.DecodeRequest(data, in)
}

// handler drops a client-sent X-Forwarded-For that grpc-gateway would not
// append to.
type handler struct {
	mux *runtime.ServeMux
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err != nil || host == "" {
		// grpc-gateway appends the remote host to X-Forwarded-For only when
		// it can parse one; otherwise the last entry would be the client's
		// own claim. Drop the claim so that the last entry, when there is
		// one, is always the gateway's.
		r.Header.Del("X-Forwarded-For")
	}
	h.mux.ServeHTTP(w, r)
}

// readError maps a failure to read a request body to an error body.
func readError(err error) error {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return gateway.TooLarge()
	}
	return status.Error(codes.InvalidArgument, "could not read the request body")
}

// marshaler renders replies with gateway.MarshalResult and decodes with
// gateway.DecodeRequest, so REST speaks exactly the JSON the MCP bridge
// speaks. Requests are decoded by call itself; the decoder is here for the
// runtime's sake.
type marshaler struct{}

// ContentType returns application/json.
func (marshaler) ContentType(any) string { return "application/json" }

// Marshal renders a proto message with gateway.MarshalResult.
func (marshaler) Marshal(v any) ([]byte, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, status.Error(codes.Internal, "internal error")
	}
	return gateway.MarshalResult(m)
}

// Unmarshal decodes into a proto message with gateway.DecodeRequest.
func (marshaler) Unmarshal(data []byte, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return status.Error(codes.Internal, "internal error")
	}
	return gateway.DecodeRequest(data, m)
}

// NewDecoder returns a decoder that reads all of r and calls Unmarshal.
func (m marshaler) NewDecoder(r io.Reader) runtime.Decoder {
	return runtime.DecoderFunc(func(v any) error {
		data, err := io.ReadAll(r)
		if err != nil {
			return readError(err)
		}
		return m.Unmarshal(data, v)
	})
}

// NewEncoder returns an encoder that writes Marshal's output.
func (m marshaler) NewEncoder(w io.Writer) runtime.Encoder {
	return runtime.EncoderFunc(func(v any) error {
		b, err := m.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	})
}

// errorHandler renders every failed call with gateway.WriteError, including
// runtime.HTTPStatusError, which carries its own HTTP status.
func errorHandler(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, _ *http.Request, err error) {
	if herr, ok := errors.AsType[*runtime.HTTPStatusError](err); ok {
		st := status.Convert(herr.Err)
		err = &gateway.HTTPError{Status: herr.HTTPStatus, Code: st.Code(), Message: st.Message()}
	}
	gateway.WriteError(w, err)
}

// routingErrorHandler answers a request that matches no route.
func routingErrorHandler(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, httpStatus int) {
	switch httpStatus {
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", http.MethodPost)
		gateway.WriteError(w, &gateway.HTTPError{Status: httpStatus, Code: codes.Unimplemented, Message: "method not allowed: use POST"})
	case http.StatusNotFound:
		gateway.WriteError(w, status.Errorf(codes.NotFound, "no route %q: tools are POST /api/<tool name>", r.URL.Path))
	case http.StatusBadRequest:
		gateway.WriteError(w, status.Error(codes.InvalidArgument, "malformed request path"))
	default:
		gateway.WriteError(w, status.Error(codes.Internal, "internal error"))
	}
}
