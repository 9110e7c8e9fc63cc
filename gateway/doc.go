// Package gateway is the HTTP contract every Hearth transport shares: the
// one walk over the proto descriptors that names each RPC's route, MCP tool
// and scope (Routes); the JSON form of requests, results and errors
// (DecodeRequest, MarshalResult, ErrorJSON, with the one gRPC-code to HTTP
// status table HTTPStatus); the request rules of docs/design.md §3 (Boundary); and
// the wire metadata by which a reply's transport reaches the budgets (Wire).
//
// The transports build on it and never on each other: gateway/rest serves
// REST through grpc-gateway, mcpbridge serves MCP, gateway/page serves the
// dashboard. So a REST body and an MCP tool result for the same call are the
// same bytes.
package gateway
