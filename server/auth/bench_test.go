package auth_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/hearth-memory/hearth/server/auth"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// BenchmarkInterceptor_Unary is what the interceptor adds to every call:
// finding the method's scope, the caller by its token among eight clients
// (hashed, compared in constant time with each), and the access log hook,
// around a handler that does nothing.
func BenchmarkInterceptor_Unary(b *testing.B) { benchUnary(b, false) }

// BenchmarkInterceptor_UnaryStored is BenchmarkInterceptor_Unary with the
// eight clients' tokens generated (Stored): what comparing with the
// digests of the moment adds to the interceptor itself, the read answering
// from memory. The read's own cost is storage's BenchmarkDB_ClientTokens.
func BenchmarkInterceptor_UnaryStored(b *testing.B) { benchUnary(b, true) }

func benchUnary(b *testing.B, stored bool) {
	var clients []auth.Client
	digests := map[string][]byte{}
	for i := range 8 {
		sum := sha256.Sum256(fmt.Appendf(nil, "token-%d", i))
		c := auth.Client{Name: fmt.Sprint("c", i), Scopes: []auth.Scope{auth.Read}, TokenSHA256: sum[:], Stored: stored}
		clients, digests[c.Name] = append(clients, c), sum[:]
	}
	in := auth.New(clients, map[string]auth.Scope{"/x.S/R": auth.Read})
	in.ReadStored(func(context.Context) (map[string][]byte, error) { return digests, nil })
	in.OnDone = func(context.Context, auth.Done) {}
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", "Bearer token-5"))
	ctx = peer.NewContext(ctx, &peer.Peer{Addr: addr{"tcp", "127.0.0.1:50000"}})
	info := &grpc.UnaryServerInfo{FullMethod: "/x.S/R"}
	handler := func(context.Context, any) (any, error) { return nil, nil }
	for b.Loop() {
		if _, err := in.Unary(ctx, nil, info, handler); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInterceptor_Authenticate is the MCP bridge's identity check of
// a request no tool call vouched for (issue #44): the caller found by its
// token among eight clients, without a call.
func BenchmarkInterceptor_Authenticate(b *testing.B) {
	var clients []auth.Client
	for i := range 8 {
		sum := sha256.Sum256(fmt.Appendf(nil, "token-%d", i))
		clients = append(clients, auth.Client{Name: fmt.Sprint("c", i), Scopes: []auth.Scope{auth.Read}, TokenSHA256: sum[:]})
	}
	in := auth.New(clients, map[string]auth.Scope{"/x.S/R": auth.Read})
	authorization := []string{"Bearer token-5"}
	for b.Loop() {
		if err := in.Authenticate(context.Background(), "/x.S/R", authorization, "127.0.0.1"); err != nil {
			b.Fatal(err)
		}
	}
}
