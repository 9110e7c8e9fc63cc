// Package gateway exposes every Hearth RPC as REST (POST /api/<tool name>)
// through grpc-gateway, and owns the one JSON form of results and errors that
// REST and the MCP bridge share.
//
// The gateway reaches the gRPC server over a client connection, never
// in-process, so every REST call passes the same authorization interceptor as
// a gRPC call. Boundary enforces the request rules of SPEC §3 (no Origin,
// application/json, Content-Length up to 1 MiB) before any body is read.
//
// Results are protojson with proto field names and default values emitted;
// errors are a hearth.v1.ErrorResponse whose code and http_status come from
// one table (HTTPStatus). MarshalResult, ErrorJSON and DecodeRequest are the
// only encoders and decoder of request and response JSON, so a REST body and
// an MCP tool result for the same call are the same bytes.
package gateway
