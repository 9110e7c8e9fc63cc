package auth_test

import (
	"context"
	"crypto/sha256"
	"net/netip"
	"sync"
	"testing"

	"github.com/hearth-memory/hearth/server/auth"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TestInterceptor_SetToken holds rotation's promise at the interceptor: the
// old token is refused and the new one accepted as soon as SetToken
// returns, while calls run concurrently (run with -race).
func TestInterceptor_SetToken(t *testing.T) {
	t.Parallel()
	oldSum, newSum := sha256.Sum256([]byte("hearth_old")), sha256.Sum256([]byte("hearth_new"))
	other := sha256.Sum256([]byte("hearth_other"))
	in := auth.New([]auth.Client{
		{Name: "agent", Scopes: []auth.Scope{auth.Read}, TokenSHA256: oldSum[:]},
		{Name: "other", Scopes: []auth.Scope{auth.Read}, TokenSHA256: other[:]},
	}, map[string]auth.Scope{"/x/Read": auth.Read})
	p := addr{"tcp", "192.0.2.1:5000"}
	with := func(tok string) metadata.MD { return metadata.Pairs("authorization", "Bearer "+tok) }

	t.Run("OK", func(t *testing.T) {
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() { // concurrent callers while the table changes
				defer wg.Done()
				for range 200 {
					call(in, "/x/Read", p, with("hearth_other"))
				}
			}()
		}
		if !in.SetToken("agent", newSum[:]) {
			t.Fatal("SetToken(agent) = false")
		}
		wg.Wait()
		if _, err := call(in, "/x/Read", p, with("hearth_old")); status.Code(err) != codes.Unauthenticated {
			t.Errorf("old token: got %v, want UNAUTHENTICATED", err)
		}
		if c, err := call(in, "/x/Read", p, with("hearth_new")); err != nil || c.Name != "agent" {
			t.Errorf("new token: got %v, %v, want agent", c, err)
		}
		if c, err := call(in, "/x/Read", p, with("hearth_other")); err != nil || c.Name != "other" {
			t.Errorf("another client's token: got %v, %v", c, err)
		}
	})
	t.Run("ErrUnknownClient", func(t *testing.T) {
		if in.SetToken("nobody", newSum[:]) {
			t.Errorf("SetToken(nobody) = true, want false")
		}
	})
	t.Run("RefusalCarriesAddr", func(t *testing.T) {
		var got auth.Denial
		in.OnRefuse = func(_ context.Context, r auth.Denial) { got = r }
		defer func() { in.OnRefuse = nil }()
		call(in, "/x/Read", p, with("hearth_nope"))
		if got.Addr != netip.MustParseAddr("192.0.2.1") || got.Code != codes.Unauthenticated {
			t.Errorf("refusal %+v, want the caller's address", got)
		}
	})
}
