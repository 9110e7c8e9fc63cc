package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"google.golang.org/grpc/metadata"

	"github.com/hearth-memory/hearth/gateway"
)

// mcpReply is the JSON-RPC reply mcp-go writes for a tool result whose text
// is text, exactly: encoding/json with HTML escaping and a final newline.
func mcpReply(tb testing.TB, id any, text string) []byte {
	tb.Helper()
	var b bytes.Buffer
	res := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(text)}}
	if err := json.NewEncoder(&b).Encode(mcp.NewJSONRPCResultResponse(mcp.NewRequestId(id), res)); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

func TestWireFrom(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		md   metadata.MD
		want gateway.Wire
	}{
		{"REST", nil, gateway.Wire{}},
		{"MCP", metadata.Pairs("x-hearth-wire", "mcp", "x-hearth-wire-overhead", "77"), gateway.Wire{MCP: true, Overhead: 77}},
		{"MCPNoOverhead", metadata.Pairs("x-hearth-wire", "mcp"), gateway.Wire{MCP: true}},
		{"MCPBadOverhead", metadata.Pairs("x-hearth-wire", "mcp", "x-hearth-wire-overhead", "-5"), gateway.Wire{MCP: true}},
		{"MCPHugeOverhead", metadata.Pairs("x-hearth-wire", "mcp", "x-hearth-wire-overhead", "99999999"), gateway.Wire{MCP: true}},
		{"Other", metadata.Pairs("x-hearth-wire", "carrier-pigeon", "x-hearth-wire-overhead", "7"), gateway.Wire{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := metadata.NewIncomingContext(context.Background(), tt.md)
			if got := gateway.WireFrom(ctx); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestWire_Size holds Size to the reply mcp-go really writes.
func TestWire_Size(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"", `{"a":"<b>&\"\\\u2028"}`, "\x00\x01\x7f\xff\xfe🙂", `{"items":[]}`} {
		for _, id := range []any{0, -12, "x\"y", "\u2029", 3.25} {
			w := gateway.Wire{MCP: true, Overhead: len(mcpReply(t, id, ""))}
			if got, want := w.Size([]byte(text)), len(mcpReply(t, id, text)); got != want {
				t.Errorf("Size(%q) with id %v: got %d, want %d", text, id, got, want)
			}
		}
		if got := (gateway.Wire{}).Size([]byte(text)); got != len(text) {
			t.Errorf("REST Size(%q): got %d", text, got)
		}
	}
}

// FuzzEscapedLen holds EscapedLen to encoding/json on any bytes, valid
// UTF-8 or not.
func FuzzEscapedLen(f *testing.F) {
	for _, s := range []string{"", "plain", `"\`, "<>&", "\b\f\n\r\t\x00\x1f\x7f", "\u2028\u2029", "\xff\xc3", "日本🙂", "\xe2\x80"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, err := json.Marshal(string(b))
		if err != nil {
			t.Fatal(err)
		}
		if got := gateway.EscapedLen(b); got != len(want)-2 {
			t.Fatalf("EscapedLen(%q) = %d, want %d (%s)", b, got, len(want)-2, want)
		}
		// Additive over a split between characters.
		for i := range len(b) + 1 {
			if i < len(b) && !utf8.RuneStart(b[i]) {
				continue
			}
			if gateway.EscapedLen(b[:i])+gateway.EscapedLen(b[i:]) != gateway.EscapedLen(b) && utf8.Valid(b) {
				t.Fatalf("EscapedLen(%q) is not additive at %d", b, i)
			}
		}
	})
}
