package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"

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
func replyOverhead(ctx context.Context, id any, version string) int {
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(mcp.NewJSONRPCResultResponse(mcp.NewRequestId(id), textResult(ctx, version, "")))
	return b.Len()
}
