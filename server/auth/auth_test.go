package auth_test

import (
	"context"
	"crypto/sha256"
	"net"
	"net/netip"
	"strings"
	"testing"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/auth"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// TestTable: every declared scope maps to its auth scope, public methods are
// there, and a missing or unknown scope fails start-up naming the RPC. That
// every real RPC declares one is held by the daemon's contract test, which
// walks the descriptors on its own.
func TestTable(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		table, err := auth.Table(map[string]hearthv1.Scope{
			"/x.S/R": hearthv1.Scope_SCOPE_READ, "/x.S/W": hearthv1.Scope_SCOPE_WRITE, "/x.S/D": hearthv1.Scope_SCOPE_DELETE,
			"/x.S/E": hearthv1.Scope_SCOPE_EXPORT, "/x.S/A": hearthv1.Scope_SCOPE_ADMIN,
		})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]auth.Scope{"/x.S/R": auth.Read, "/x.S/W": auth.Write, "/x.S/D": auth.Delete, "/x.S/E": auth.Export, "/x.S/A": auth.Admin,
			"/grpc.health.v1.Health/Check": auth.Public}
		for m, s := range want {
			if table[m] != s {
				t.Errorf("table[%s] = %q, want %q", m, table[m], s)
			}
		}
	})
	for name, scope := range map[string]hearthv1.Scope{"ErrUnspecified": hearthv1.Scope_SCOPE_UNSPECIFIED, "ErrUnknown": hearthv1.Scope(77)} {
		t.Run(name, func(t *testing.T) {
			_, err := auth.Table(map[string]hearthv1.Scope{"/x.S/R": hearthv1.Scope_SCOPE_READ, "/x.S/Bad": scope})
			if err == nil || !strings.Contains(err.Error(), "/x.S/Bad") {
				t.Errorf("got %v, want an error naming /x.S/Bad", err)
			}
		})
	}
	t.Run("ErrShadowsPublic", func(t *testing.T) {
		if _, err := auth.Table(map[string]hearthv1.Scope{"/grpc.health.v1.Health/Check": hearthv1.Scope_SCOPE_ADMIN}); err == nil {
			t.Error("an RPC named like a public method: want an error")
		}
	})
}

type addr struct{ network, s string }

func (a addr) Network() string { return a.network }
func (a addr) String() string  { return a.s }

func call(in *auth.Interceptor, method string, p net.Addr, md metadata.MD) (auth.Caller, error) {
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: p})
	ctx = metadata.NewIncomingContext(ctx, md)
	var got auth.Caller
	_, err := in.Unary(ctx, nil, &grpc.UnaryServerInfo{FullMethod: method}, func(ctx context.Context, _ any) (any, error) {
		got, _ = auth.FromContext(ctx)
		return nil, nil
	})
	return got, err
}

func TestInterceptor_Unary(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("hearth_secret-token"))
	lan := netip.MustParseAddr("192.168.1.50")
	in := auth.New([]auth.Client{
		{Name: "agent", Scopes: []auth.Scope{auth.Read, auth.Write}, TokenSHA256: sum[:]},
		{Name: "lan", Scopes: []auth.Scope{auth.Read, auth.Write, auth.Delete}, IP: lan},
		{Name: "writer-only", Scopes: []auth.Scope{auth.Write}, IP: netip.MustParseAddr("192.168.1.51")},
	}, map[string]auth.Scope{
		"/x/Read":   auth.Read,
		"/x/Write":  auth.Write,
		"/x/Health": auth.Public,
	})
	var refused []auth.Denial
	in.OnRefuse = func(_ context.Context, r auth.Denial) { refused = append(refused, r) }
	tcp := func(a string) net.Addr { return addr{"tcp", a} }
	bufconn := addr{auth.InProcessNetwork, "bufconn"}
	bearer := metadata.Pairs("authorization", "Bearer hearth_secret-token")

	cases := []struct {
		name   string
		method string
		peer   net.Addr
		md     metadata.MD
		want   codes.Code
		caller string
	}{
		{"OKToken", "/x/Write", tcp("10.0.0.9:5555"), bearer, codes.OK, "agent"},
		{"OKTokenCaseInsensitiveScheme", "/x/Read", tcp("10.0.0.9:5555"), metadata.Pairs("authorization", "bearer hearth_secret-token"), codes.OK, "agent"},
		{"ErrWrongToken", "/x/Read", tcp("192.168.1.50:1"), metadata.Pairs("authorization", "Bearer nope"), codes.Unauthenticated, ""},
		{"ErrMalformedAuthorization", "/x/Read", tcp("10.0.0.9:1"), metadata.Pairs("authorization", "Basic abc"), codes.Unauthenticated, ""},
		{"ErrNoCredentials", "/x/Read", tcp("10.0.0.9:1"), nil, codes.Unauthenticated, ""},
		{"OKAddressReads", "/x/Read", tcp("192.168.1.50:40000"), nil, codes.OK, "lan"},
		{"ErrAddressNeverWrites", "/x/Write", tcp("192.168.1.50:40000"), nil, codes.PermissionDenied, ""},
		{"ErrAddressWithoutReadGetsNothing", "/x/Read", tcp("192.168.1.51:1"), nil, codes.PermissionDenied, ""},
		{"OKMappedIPv6Address", "/x/Read", tcp("[::ffff:192.168.1.50]:1"), nil, codes.OK, "lan"},
		{"ErrForwardedFromExternalPeerIgnored", "/x/Read", tcp("10.0.0.9:1"), metadata.Pairs("x-forwarded-for", "192.168.1.50"), codes.Unauthenticated, ""},
		{"OKForwardedOverInProcess", "/x/Read", bufconn, metadata.Pairs("x-forwarded-for", "10.0.0.1, 192.168.1.50"), codes.OK, "lan"},
		{"ErrForwardedOnlyLastEntryCounts", "/x/Read", bufconn, metadata.Pairs("x-forwarded-for", "192.168.1.50, 10.0.0.1"), codes.Unauthenticated, ""},
		{"ErrUnknownMethodDenied", "/x/Unlisted", tcp("10.0.0.9:1"), bearer, codes.PermissionDenied, ""},
		{"OKPublic", "/x/Health", tcp("10.0.0.9:1"), nil, codes.OK, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := call(in, c.method, c.peer, c.md)
			if code := status.Code(err); code != c.want {
				t.Fatalf("code = %v, want %v (%v)", code, c.want, err)
			}
			if got.Name != c.caller {
				t.Errorf("caller = %q, want %q", got.Name, c.caller)
			}
			if c.caller == "lan" && (got.ByToken || len(got.Scopes) != 1 || got.Scopes[0] != auth.Read) {
				t.Errorf("address client scopes = %v (by token %v), want read only", got.Scopes, got.ByToken)
			}
		})
	}
	if len(refused) == 0 {
		t.Errorf("refusals were not reported for the audit")
	}
	for _, r := range refused {
		if r.Reason == "" || r.Method == "" {
			t.Errorf("refusal without reason or method: %+v", r)
		}
	}
}

// TestInterceptor_OnDone: every call of a non-public method is reported
// once, refused or not, with the client when one is known and the outcome
// code; public methods are not.
func TestInterceptor_OnDone(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("hearth_secret-token"))
	in := auth.New([]auth.Client{{Name: "agent", Scopes: []auth.Scope{auth.Read}, TokenSHA256: sum[:]}},
		map[string]auth.Scope{"/x/Read": auth.Read, "/x/Write": auth.Write, "/x/Health": auth.Public})
	var done []auth.Done
	in.OnDone = func(_ context.Context, d auth.Done) { done = append(done, d) }
	bearer := metadata.Pairs("authorization", "Bearer hearth_secret-token")
	tcp := addr{"tcp", "10.0.0.9:5555"}
	call(in, "/x/Read", tcp, bearer)
	call(in, "/x/Write", tcp, bearer)
	call(in, "/x/Read", tcp, nil)
	call(in, "/x/Health", tcp, nil)
	want := []auth.Done{
		{Method: "/x/Read", Client: "agent", Code: codes.OK},
		{Method: "/x/Write", Client: "agent", Code: codes.PermissionDenied},
		{Method: "/x/Read", Client: "", Code: codes.Unauthenticated},
	}
	if len(done) != len(want) {
		t.Fatalf("reported %d calls, want %d: %+v", len(done), len(want), done)
	}
	for i, d := range done {
		if d.Method != want[i].Method || d.Client != want[i].Client || d.Code != want[i].Code || d.Duration < 0 {
			t.Errorf("call %d = %+v, want %+v", i, d, want[i])
		}
	}
}

// TestInterceptor_Authenticate: the decision without a call, as the MCP
// bridge asks it (issue #44): a token or address client is known (its
// scopes are not checked), anything else is refused UNAUTHENTICATED and
// reported with the method named and the address; a token replaced by
// SetToken is refused from that moment.
func TestInterceptor_Authenticate(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("hearth_old"))
	in := auth.New([]auth.Client{
		{Name: "agent", Scopes: []auth.Scope{auth.Write}, TokenSHA256: sum[:]},
		{Name: "lan", Scopes: []auth.Scope{auth.Write}, IP: netip.MustParseAddr("192.168.1.50")},
	}, map[string]auth.Scope{"/x/Whoami": auth.Read})
	var refused []auth.Denial
	in.OnRefuse = func(_ context.Context, r auth.Denial) { refused = append(refused, r) }
	ctx := context.Background()
	for _, c := range []struct {
		name          string
		authorization []string
		addr          string
		want          codes.Code
	}{
		{"OKToken", []string{"Bearer hearth_old"}, "10.0.0.9", codes.OK},
		{"OKAddress", nil, "192.168.1.50", codes.OK},
		{"ErrUnknownToken", []string{"Bearer nope"}, "192.168.1.50", codes.Unauthenticated},
		{"ErrTwoHeaders", []string{"Bearer hearth_old", "Bearer hearth_old"}, "10.0.0.9", codes.Unauthenticated},
		{"ErrNoCredentials", nil, "10.0.0.9", codes.Unauthenticated},
		{"ErrNoAddress", nil, "", codes.Unauthenticated},
	} {
		refused = nil
		err := in.Authenticate(ctx, "/x/Whoami", c.authorization, c.addr)
		if got := status.Code(err); got != c.want {
			t.Errorf("%s: code %v (%v), want %v", c.name, got, err, c.want)
		}
		if wantRefused := c.want != codes.OK; (len(refused) == 1) != wantRefused {
			t.Errorf("%s: refusals reported %+v", c.name, refused)
		} else if wantRefused && (refused[0].Method != "/x/Whoami" || refused[0].Code != codes.Unauthenticated || c.addr != "" && refused[0].Addr.String() != c.addr) {
			t.Errorf("%s: refusal %+v", c.name, refused[0])
		}
	}
	fresh := sha256.Sum256([]byte("hearth_new"))
	in.SetToken("agent", fresh[:])
	if err := in.Authenticate(ctx, "/x/Whoami", []string{"Bearer hearth_old"}, "10.0.0.9"); status.Code(err) != codes.Unauthenticated {
		t.Errorf("the replaced token: %v, want UNAUTHENTICATED", err)
	}
	if err := in.Authenticate(ctx, "/x/Whoami", []string{"Bearer hearth_new"}, "10.0.0.9"); err != nil {
		t.Errorf("the new token: %v", err)
	}
}
