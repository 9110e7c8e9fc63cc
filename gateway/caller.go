package gateway

import (
	"context"
	"net"
	"net/http"

	"google.golang.org/grpc/metadata"
)

// Caller is what a handler that calls the server over the in-process
// channel forwards about its HTTP caller: the Authorization header values
// and the host of the request's remote address (never a client-sent
// X-Forwarded-For). Values gRPC metadata cannot carry (anything but
// printable ASCII) are left out.
func Caller(r *http.Request) (authorization []string, addr string) {
	for _, v := range r.Header.Values("Authorization") {
		if printableASCII(v) {
			authorization = append(authorization, v)
		}
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil && printableASCII(host) {
		addr = host
	}
	return authorization, addr
}

// CallerMetadata is the gRPC metadata that carries a caller, as the REST
// gateway sends it: authorization, and addr as x-forwarded-for, which the
// interceptor trusts only on the in-process channel.
func CallerMetadata(authorization []string, addr string) metadata.MD {
	md := metadata.MD{}
	for _, v := range authorization {
		md.Append("authorization", v)
	}
	if addr != "" {
		md.Set("x-forwarded-for", addr)
	}
	return md
}

// WithBearer returns ctx with token as the bearer credentials of its
// outgoing calls, as a client of its own (the page) calls the server.
func WithBearer(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// printableASCII reports whether v holds only printable ASCII, what gRPC
// metadata values may hold.
func printableASCII(v string) bool {
	for i := range len(v) {
		if v[i] < 0x20 || v[i] > 0x7e {
			return false
		}
	}
	return true
}
