package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Wire metadata: every tool call tells the service that its reply travels
// as an MCP JSON-RPC reply, and how many bytes that reply takes around the
// result's text, so that a budget measured on the wire (memory_bootstrap:
// 2,000 bytes for the whole reply) is met by the service, which knows what
// it may leave out, rather than trimmed here. Package server/budget reads
// the same names; nothing else does.
const (
	// WireMetadata names the transport the reply travels on.
	WireMetadata = "x-hearth-wire"
	// WireMCP is WireMetadata's value for the bridge.
	WireMCP = "mcp"
	// WireOverheadMetadata is the size in bytes of the call's JSON-RPC reply
	// with an empty text, as replyOverhead measures it.
	WireOverheadMetadata = "x-hearth-wire-overhead"
)

type requestIDKey struct{}

// withRequestID puts the JSON-RPC id of the request in r's body (Boundary
// has capped it) in r's context, for replyOverhead, and leaves the body for
// mcp-go to read as it was. A body that is not a JSON object with an id
// (mcp-go refuses it) is passed on alone.
func withRequestID(r *http.Request) *http.Request {
	if r.Body == nil {
		return r
	}
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
	var msg struct {
		ID json.RawMessage `json:"id"`
	}
	if err != nil || json.Unmarshal(body, &msg) != nil || msg.ID == nil {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), requestIDKey{}, msg.ID))
}

// errReader fails with err once its reader is read to the end, so that a
// body that failed to read fails for mcp-go as well; a nil err is io.EOF.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err == nil {
		return 0, io.EOF
	}
	return 0, e.err
}

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
// text, written as mcp-go writes a reply: the request's id as mcp-go reads
// and writes it back, encoding/json with HTML escaping, a final newline.
// The reply with a text is this plus the text's escaped length.
func replyOverhead(ctx context.Context, version string) int {
	var id mcp.RequestId
	if raw, ok := ctx.Value(requestIDKey{}).(json.RawMessage); ok {
		_ = json.Unmarshal(raw, &id) // mcp-go refuses the call if this fails
	}
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(mcp.NewJSONRPCResultResponse(id, textResult(ctx, version, "")))
	return b.Len()
}
