package mcpbridge

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"
)

// eras are the contexts of a call of each protocol era.
func eras() map[string]context.Context {
	return map[string]context.Context{
		"legacy": context.Background(),
		"modern": server.WithRequestProtocolInfo(context.Background(), &server.RequestProtocolInfo{Modern: true, ProtocolVersion: "2026-07-28"}),
	}
}

// TestReplyOverhead: the overhead taken from the measured envelope and the
// id's own encoding is the size of the whole reply with an empty text, for
// ids of every kind mcp-go parses (numbers, strings needing escapes, none),
// in both protocol eras and for two server versions.
func TestReplyOverhead(t *testing.T) {
	t.Parallel()
	ids := []any{
		nil, 0, 1, -1, int64(1) << 53, float64(7), 1.5, math.MaxInt64,
		"", "a", "req-<&>\"\\\u2028\u2029-", strings.Repeat("é", 20), "\x00\x1f", "\xff", strings.Repeat("x", 400),
	}
	for era, ctx := range eras() {
		for _, version := range []string{"0.1.0", "1.2.3-dev+<&>"} {
			for _, id := range ids {
				if got, want := replyOverhead(ctx, id, version), len(encodeReply(ctx, id, version)); got != want {
					t.Errorf("%s %q id %#v: replyOverhead = %d, the reply with an empty text is %d bytes", era, version, id, got, want)
				}
			}
		}
	}
}

// FuzzReplyOverhead holds replyOverhead to the whole reply's size for any
// string or number id (a JSON number is finite: an id parsed from a
// request is never an infinity or NaN). The committed corpus is in
// testdata/fuzz/FuzzReplyOverhead.
func FuzzReplyOverhead(f *testing.F) {
	f.Add("req-1", int64(1), 0.5)
	f.Add("<\u2028\xff>", int64(-1)<<53, -math.MaxFloat64)
	f.Fuzz(func(t *testing.T, s string, n int64, x float64) {
		ids := []any{s, n}
		if !math.IsInf(x, 0) && !math.IsNaN(x) {
			ids = append(ids, x)
		}
		for era, ctx := range eras() {
			for _, id := range ids {
				if got, want := replyOverhead(ctx, id, "0.1.0"), len(encodeReply(ctx, id, "0.1.0")); got != want {
					t.Errorf("%s id %#v: replyOverhead = %d, the reply with an empty text is %d bytes", era, id, got, want)
				}
			}
		}
	})
}

// BenchmarkReplyOverhead measures the overhead of one MCP call's reply as
// the bridge takes it (envelope) and as measuring the whole reply takes it
// (encode), for a modern call.
func BenchmarkReplyOverhead(b *testing.B) {
	ctx := eras()["modern"]
	b.Run("envelope", func(b *testing.B) {
		for i := range b.N {
			replyOverhead(ctx, i, "0.1.0")
		}
	})
	b.Run("encode", func(b *testing.B) {
		for i := range b.N {
			_ = len(encodeReply(ctx, i, "0.1.0"))
		}
	})
}
