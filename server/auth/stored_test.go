package auth_test

import (
	"context"
	"crypto/sha256"
	"sync/atomic"
	"testing"

	"github.com/hearth-memory/hearth/server/auth"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// TestInterceptor_ReadStored holds the interceptor to the database's
// digest of a generated token at each call (docs/operations.md,
// "Tokens"): a Stored client is compared with what the read returns now,
// not with its digest at start; a supplied token is not; a failed read is
// the call's answer, not a refusal.
func TestInterceptor_ReadStored(t *testing.T) {
	t.Parallel()
	start, rotated := sha256.Sum256([]byte("hearth_start")), sha256.Sum256([]byte("hearth_rotated"))
	supplied := sha256.Sum256([]byte("hearth_supplied"))
	in := auth.New([]auth.Client{
		{Name: "agent", Scopes: []auth.Scope{auth.Read}, TokenSHA256: start[:], Stored: true},
		{Name: "ci", Scopes: []auth.Scope{auth.Read}, TokenSHA256: supplied[:]},
	}, map[string]auth.Scope{"/x/Read": auth.Read})
	var (
		current atomic.Pointer[map[string][]byte]
		reads   atomic.Int64
		fail    atomic.Pointer[error]
	)
	set := func(m map[string][]byte) { current.Store(&m) }
	set(map[string][]byte{"agent": start[:], "ci": rotated[:]})
	in.ReadStored(func(context.Context) (map[string][]byte, error) {
		reads.Add(1)
		if err := fail.Load(); err != nil {
			return nil, *err
		}
		return *current.Load(), nil
	})
	var refused atomic.Int64
	in.OnRefuse = func(context.Context, auth.Denial) { refused.Add(1) }
	p := addr{"tcp", "192.0.2.1:5000"}
	with := func(tok string) metadata.MD { return metadata.Pairs("authorization", "Bearer "+tok) }
	want := func(tok, client string) {
		t.Helper()
		c, err := call(in, "/x/Read", p, with(tok))
		switch {
		case client == "" && status.Code(err) != codes.Unauthenticated:
			t.Errorf("%s: got %v, %v, want UNAUTHENTICATED", tok, c, err)
		case client != "" && (err != nil || c.Name != client):
			t.Errorf("%s: got %v, %v, want %s", tok, c, err, client)
		}
		aerr := in.Authenticate(context.Background(), "/x/Read", []string{"Bearer " + tok}, "192.0.2.1")
		if (aerr == nil) != (client != "") {
			t.Errorf("Authenticate(%s) = %v, want known: %v", tok, aerr, client != "")
		}
	}

	want("hearth_start", "agent")
	// A supplied token is the configuration's, whatever the store says of
	// a client by that name.
	want("hearth_supplied", "ci")
	want("hearth_rotated", "")

	set(map[string][]byte{"agent": rotated[:]})
	want("hearth_start", "")
	want("hearth_rotated", "agent")

	set(map[string][]byte{})
	want("hearth_rotated", "")

	down := status.Error(codes.Unavailable, "the store is down")
	fail.Store(&down)
	before := refused.Load()
	handled := false
	_, err := in.Unary(peer.NewContext(metadata.NewIncomingContext(context.Background(), with("hearth_rotated")), &peer.Peer{Addr: p}),
		nil, &grpc.UnaryServerInfo{FullMethod: "/x/Read"}, func(context.Context, any) (any, error) { handled = true; return nil, nil })
	if err != down || handled || refused.Load() != before {
		t.Errorf("a failed read: got %v (handled %v, refusals %d), want the read's error, no handler, no refusal", err, handled, refused.Load()-before)
	}
	if err := in.Authenticate(context.Background(), "/x/Read", []string{"Bearer hearth_supplied"}, "192.0.2.1"); err != down {
		t.Errorf("Authenticate with a failed read: %v, want the read's error", err)
	}
	// A call with no token reads nothing.
	n := reads.Load()
	call(in, "/x/Read", p, nil)
	if reads.Load() != n {
		t.Errorf("a call without a token read the stored digests")
	}
}

// TestInterceptor_ReadStoredWithoutStoredClients: with no Stored client
// (only supplied or in-process tokens) ReadStored changes nothing and no
// call reads.
func TestInterceptor_ReadStoredWithoutStoredClients(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("hearth_supplied"))
	in := auth.New([]auth.Client{{Name: "ci", Scopes: []auth.Scope{auth.Read}, TokenSHA256: sum[:]}},
		map[string]auth.Scope{"/x/Read": auth.Read})
	in.ReadStored(func(context.Context) (map[string][]byte, error) {
		t.Error("read with no Stored client")
		return nil, nil
	})
	if c, err := call(in, "/x/Read", addr{"tcp", "192.0.2.1:5000"}, metadata.Pairs("authorization", "Bearer hearth_supplied")); err != nil || c.Name != "ci" {
		t.Errorf("got %v, %v, want ci", c, err)
	}
}
