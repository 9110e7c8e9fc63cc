package gateway

import (
	"context"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"google.golang.org/grpc/metadata"
)

// Wire metadata: every MCP tool call tells the service that its reply
// travels as the text of a JSON-RPC reply, and how many bytes that reply
// takes around the text, so that a budget measured on the wire
// (memory_bootstrap: 2,000 bytes for the whole reply, R-B1) is met by the
// service, which knows what it may leave out, rather than trimmed by the
// bridge. The bridge sets these names on its outgoing calls; the service
// reads them through WireFrom.
const (
	// WireMetadata names the transport the reply travels on.
	WireMetadata = "x-hearth-wire"
	// WireMCP is WireMetadata's value for the MCP bridge.
	WireMCP = "mcp"
	// WireOverheadMetadata is the size in bytes of the call's JSON-RPC reply
	// with an empty text: envelope, request id, content wrapper, newline.
	WireOverheadMetadata = "x-hearth-wire-overhead"
)

// MaxWireOverhead is the largest envelope WireFrom believes; a larger claim
// counts as none. It is far above any real one (~60 bytes and the id).
const MaxWireOverhead = 1 << 16

// Wire is how a reply reaches its caller, and so how its bytes count. The
// zero Wire is the REST body (and gRPC): the reply's JSON itself.
type Wire struct {
	// MCP is set when the JSON travels as the text of the one content of a
	// JSON-RPC reply, written by encoding/json with HTML escaping on: a
	// JSON string, so '"' and '\' take 2 bytes, '<', '>', '&', control
	// characters, U+2028, U+2029 and each invalid UTF-8 byte 6.
	MCP bool
	// Overhead is the size of that reply with an empty text.
	Overhead int
}

// WireFrom reads the Wire of the call in ctx from its incoming metadata.
// The claim is believed from any caller: a JSON-RPC reply is never smaller
// than the JSON it carries, so claiming one can only shrink the caller's
// own reply.
func WireFrom(ctx context.Context) Wire {
	md, _ := metadata.FromIncomingContext(ctx)
	v := md.Get(WireMetadata)
	if len(v) == 0 || v[len(v)-1] != WireMCP {
		return Wire{}
	}
	w := Wire{MCP: true}
	if v := md.Get(WireOverheadMetadata); len(v) > 0 {
		if n, err := strconv.Atoi(v[len(v)-1]); err == nil && n >= 0 && n <= MaxWireOverhead {
			w.Overhead = n
		}
	}
	return w
}

// Size returns the bytes the caller receives for a reply whose JSON is b.
func (w Wire) Size(b []byte) int {
	if !w.MCP {
		return len(b)
	}
	return w.Overhead + EscapedLen(b)
}

// Fragment returns what a piece of a reply's JSON (whole characters) adds
// to Size.
func (w Wire) Fragment(b []byte) int {
	if !w.MCP {
		return len(b)
	}
	return EscapedLen(b)
}

// invalidByteLen is how many bytes encoding/json writes for a byte that is
// not UTF-8: the escape \ufffd up to Go 1.26, U+FFFD itself from Go 1.27
// (json/v2 underneath). It is measured once from the encoder the binary is
// built with, so sizes hold whichever toolchain builds it.
var invalidByteLen = func() int {
	b, _ := json.Marshal("\xff")
	return len(b) - len(`""`)
}()

// EscapedLen returns the length of b written as the inside of a JSON string
// by encoding/json with HTML escaping on, as mcp-go writes a text content
// (the quotes not counted). It is additive: the length of a concatenation is
// the sum of the lengths of its parts, when they split between characters.
func EscapedLen(b []byte) int {
	n := 0
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"', c == '\\', c == '\b', c == '\f', c == '\n', c == '\r', c == '\t':
				n += 2
			case c < 0x20, c == '<', c == '>', c == '&':
				n += len(`\u0000`)
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += invalidByteLen
		case r == '\u2028', r == '\u2029':
			n += len(`\u2028`)
		default:
			n += size
		}
		i += size
	}
	return n
}
