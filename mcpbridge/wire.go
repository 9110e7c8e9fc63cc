package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// textResult is the tool result whose one content is text. For a request
// of protocol 2026-07-28 or later it already holds what mcp-go would add to
// it (resultType and the server's identity in _meta; mcp-go keeps values a
// handler set), so that replyOverhead measures the reply that is sent.
func textResult(ctx context.Context, version, text string) *mcp.CallToolResult {
	res := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(text)}}
	if server.IsModernRequest(ctx) {
		res.ResultType = mcp.ResultTypeComplete
		res.EnsureResultMeta().SetServerInfo(mcp.Implementation{Name: ServerName, Version: version})
	}
	return res
}

// replyOverhead returns the size of the call's JSON-RPC reply with an empty
// text, written as mcp-go writes a reply: id as mcp-go parsed it and writes
// it back, encoding/json with HTML escaping, a final newline. The reply with
// a text is this plus the text's escaped length (gateway.Wire).
//
// Only the id differs between two calls of one protocol era: the reply
// with id 0 is measured once per era and version (envelopes), and the
// id's own encoding replaces that of 0. encodeReply is the measure this
// must equal (TestReplyOverhead, FuzzReplyOverhead).
func replyOverhead(ctx context.Context, id any, version string) int {
	key := envelopeKey{modern: server.IsModernRequest(ctx), version: version}
	n, ok := envelopes.Load(key)
	if !ok {
		n, _ = envelopes.LoadOrStore(key, len(encodeReply(ctx, 0, version))-len(encodeID(0)))
	}
	return n.(int) + len(encodeID(id))
}

// envelopes holds the size of the reply with an empty text, less its id,
// for each protocol era and server version met (replyOverhead).
var envelopes sync.Map

type envelopeKey struct {
	modern  bool
	version string
}

// encodeReply is the call's reply with an empty text, as mcp-go writes it.
func encodeReply(ctx context.Context, id any, version string) []byte {
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(mcp.NewJSONRPCResultResponse(mcp.NewRequestId(id), textResult(ctx, version, "")))
	return b.Bytes()
}

// encodeID is id as the reply writes it: encoding/json escapes HTML in a
// value a MarshalJSON method returns, as the encoder does in its own.
func encodeID(id any) []byte {
	b, _ := json.Marshal(mcp.NewRequestId(id))
	return b
}
