// Package mcpbridge offers every Hearth RPC as an MCP tool over streamable
// HTTP (POST /mcp), answered with plain JSON.
//
// The tools are generated from the proto descriptors: name, title and
// annotation hints from each RPC's hearth.v1.tool option, the description from
// its proto comment, and the input schema from its request message. A call
// decodes the arguments with gateway.DecodeRequest and invokes the RPC over a
// gRPC client connection, so it passes the server's interceptors with the
// caller's Authorization header and address, and with the wire metadata a
// budget on the whole reply needs (see gateway.WireMetadata). A result is the text of
// gateway.MarshalResult and an error the text of gateway.ErrorJSON: the same
// bytes a REST caller gets. tools/list shows a caller the tools its scopes
// can call, as memory_whoami reports them: a view, while the interceptor
// still decides every call. The bridge holds no business logic.
package mcpbridge
