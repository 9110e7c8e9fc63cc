package gateway_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/hearth-memory/hearth/gateway"
	"google.golang.org/grpc/metadata"
)

// TestCaller: the Authorization values and the remote host travel, a
// client's own X-Forwarded-For and any value gRPC metadata cannot carry do
// not.
func TestCaller(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("POST", "/mcp", nil)
	r.RemoteAddr = "192.0.2.7:40000"
	r.Header.Add("Authorization", "Bearer ok")
	r.Header.Add("Authorization", "Bearer bad\x7f")
	r.Header.Set("X-Forwarded-For", "203.0.113.9")
	auth, addr := gateway.Caller(r)
	if !slices.Equal(auth, []string{"Bearer ok"}) || addr != "192.0.2.7" {
		t.Fatalf("Caller = %q, %q; want [Bearer ok], 192.0.2.7", auth, addr)
	}
	md := gateway.CallerMetadata(auth, addr)
	if !slices.Equal(md.Get("authorization"), auth) || !slices.Equal(md.Get("x-forwarded-for"), []string{addr}) {
		t.Fatalf("CallerMetadata = %v", md)
	}
	if md := gateway.CallerMetadata(nil, ""); len(md) != 0 {
		t.Fatalf("CallerMetadata of no caller = %v; want empty", md)
	}
}

// TestWithBearer: the token travels as the one authorization value of the
// outgoing call, in the Bearer form the interceptor reads.
func TestWithBearer(t *testing.T) {
	t.Parallel()
	md, _ := metadata.FromOutgoingContext(gateway.WithBearer(context.Background(), "hearth_x"))
	if got := md.Get("authorization"); !slices.Equal(got, []string{"Bearer hearth_x"}) {
		t.Errorf("authorization = %q, want [Bearer hearth_x]", got)
	}
}
