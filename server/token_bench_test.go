package server_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/server/servertest"
)

// BenchmarkToken_Whoami is a whole call (memory_whoami over gRPC, through
// the interceptor) by a generated token, whose digest the interceptor
// reads from the store at each call, and by a supplied one
// (token_sha256), which it does not: the difference is what reading the
// digests of the moment costs a call (docs/operations.md, "Tokens"), on
// the backend HEARTH_STORAGE_BACKEND names.
func BenchmarkToken_Whoami(b *testing.B) {
	supplied, err := server.NewToken()
	if err != nil {
		b.Fatal(err)
	}
	sum := sha256.Sum256([]byte(supplied))
	opts := servertest.Options()
	opts.Clients = append(opts.Clients, options.Client{Name: "ci", Scopes: []options.Scope{options.ScopeRead}, TokenSHA256: hex.EncodeToString(sum[:])})
	s := servertest.Start(b, opts)
	client := hearthv1.NewAdminServiceClient(s.Conn)
	cases := []struct{ name, token string }{{"generated", s.Tokens["codex"]}, {"supplied", supplied}}
	// The first calls of a new server meet its start-up work; measured
	// without this, whichever case ran first was the slower.
	for range 2000 {
		for _, c := range cases {
			if _, err := client.Whoami(s.Context(b, c.token), &hearthv1.WhoamiRequest{}); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ctx := s.Context(b, c.token)
			for b.Loop() {
				if _, err := client.Whoami(ctx, &hearthv1.WhoamiRequest{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
