package servertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/gateway"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Result is one call's outcome, the same shape for every transport.
type Result struct {
	OK   bool
	Code string // gRPC code name on failure, e.g. ABORTED
	HTTP int    // HTTP status (REST), or the http_status of the error body
	Raw  []byte // the JSON result or error body
	Body map[string]any
}

func (r Result) String() string {
	return fmt.Sprintf("ok=%v code=%s http=%d body=%s", r.OK, r.Code, r.HTTP, r.Raw)
}

// decode fills Body from Raw, and on failure Code and HTTP from the error
// body.
func (r *Result) decode() {
	r.Body = map[string]any{}
	_ = json.Unmarshal(r.Raw, &r.Body)
	if e, ok := r.Body["error"].(map[string]any); ok && !r.OK {
		r.Code, _ = e["code"].(string)
		if r.HTTP == 0 {
			if f, ok := e["http_status"].(float64); ok {
				r.HTTP = int(f)
			}
		}
	}
}

// Transport calls a tool by name with JSON arguments as one client kind.
type Transport interface {
	Name() string
	Call(tb testing.TB, token, tool string, args any) Result
}

// REST calls POST {URL}/api/{tool} with a bearer token.
type REST struct{ URL string }

func (REST) Name() string { return "rest" }

func (c REST) Call(tb testing.TB, token, tool string, args any) Result {
	tb.Helper()
	b, _ := json.Marshal(args)
	req, _ := http.NewRequest(http.MethodPost, c.URL+"/api/"+tool, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("rest %s: %v", tool, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := Result{OK: resp.StatusCode == http.StatusOK, HTTP: resp.StatusCode, Raw: raw}
	r.decode()
	return r
}

// MCP posts JSON-RPC requests to {URL}/mcp with a bearer token, as a
// stateless streamable HTTP client does.
type MCP struct {
	URL    string
	Client *http.Client // nil: http.DefaultClient
}

func (MCP) Name() string { return "mcp" }

// RPC posts one JSON-RPC request to /mcp and returns the HTTP status and
// body.
func (c MCP) RPC(tb testing.TB, token string, method string, params any) (int, []byte) {
	tb.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
	b, _ := json.Marshal(msg)
	req, _ := http.NewRequest(http.MethodPost, c.URL+"/mcp", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	hc := c.Client
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		tb.Fatalf("mcp %s: %v", method, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode == 200 && !strings.HasPrefix(ct, "application/json") {
		tb.Fatalf("mcp %s: Content-Type %q, want application/json", method, ct)
	}
	return resp.StatusCode, raw
}

func (c MCP) Call(tb testing.TB, token, tool string, args any) Result {
	tb.Helper()
	code, raw := c.RPC(tb, token, "tools/call", map[string]any{"name": tool, "arguments": args})
	if code == http.StatusUnauthorized {
		// The bridge refuses an unknown caller before any MCP method runs,
		// with the same error body as REST.
		r := Result{Raw: raw, HTTP: code}
		r.decode()
		return r
	}
	if code != http.StatusOK {
		tb.Fatalf("mcp tools/call %s: HTTP %d %s", tool, code, raw)
	}
	var env struct {
		Result *struct {
			IsError bool `json:"isError"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
		Error any `json:"error"`
	}
	if err := json.Unmarshal(raw, &env); err != nil || env.Result == nil || len(env.Result.Content) != 1 {
		tb.Fatalf("mcp tools/call %s: unexpected reply %s", tool, raw)
	}
	r := Result{OK: !env.Result.IsError, Raw: []byte(env.Result.Content[0].Text)}
	r.decode()
	if r.OK {
		r.HTTP = http.StatusOK
	}
	return r
}

// GRPC calls the tool's RPC over Conn, its request decoded from the JSON
// arguments and its reply rendered as the transports' shared JSON.
type GRPC struct {
	Conn grpc.ClientConnInterface
	MD   metadata.MD // extra metadata, e.g. a forged x-forwarded-for
}

func (GRPC) Name() string { return "grpc" }

func (c GRPC) Call(tb testing.TB, token, tool string, args any) Result {
	tb.Helper()
	call := c.Prepare(tb, token, tool, args)
	err := call.Invoke()
	if err != nil {
		if _, ok := status.FromError(err); !ok {
			tb.Fatalf("grpc %s: %v", tool, err)
		}
		httpStatus, raw := gateway.ErrorJSON(err)
		r := Result{Raw: raw, HTTP: httpStatus}
		r.decode()
		return r
	}
	raw, err := gateway.MarshalResult(call.Resp)
	if err != nil {
		tb.Fatal(err)
	}
	r := Result{OK: true, HTTP: http.StatusOK, Raw: raw}
	r.decode()
	return r
}

// Route finds the RPC whose tool option carries name.
func Route(tb testing.TB, tool string) gateway.Route {
	tb.Helper()
	for _, r := range Routes(tb) {
		if r.Tool.GetName() == tool {
			return r
		}
	}
	tb.Fatalf("no RPC for tool %s", tool)
	return gateway.Route{}
}

// Routes returns every RPC as the transports offer it.
func Routes(tb testing.TB) []gateway.Route {
	tb.Helper()
	rs, err := gateway.Routes()
	if err != nil {
		tb.Fatal(err)
	}
	return rs
}

func newMessage(tb testing.TB, d protoreflect.MessageDescriptor) proto.Message {
	mt, err := protoregistry.GlobalTypes.FindMessageByName(d.FullName())
	if err != nil {
		tb.Fatal(err)
	}
	return mt.New().Interface()
}

// Call is one gRPC call made ready: its request built from JSON arguments
// and its metadata set before a benchmark's clock starts, so that what is
// timed is the call as a gRPC client makes it, not the harness turning
// JSON into messages and back.
type Call struct {
	Conn      grpc.ClientConnInterface
	Ctx       context.Context
	Method    string
	Req, Resp proto.Message
}

// Prepare readies a call of tool with args, with the transport's extra
// metadata; Invoke makes it.
func (c GRPC) Prepare(tb testing.TB, token, tool string, args any) Call {
	tb.Helper()
	md := Route(tb, tool)
	req, resp := newMessage(tb, md.Method.Input()), newMessage(tb, md.Method.Output())
	b, _ := json.Marshal(args)
	if err := protojson.Unmarshal(b, req); err != nil {
		tb.Fatalf("grpc %s: arguments: %v", tool, err)
	}
	out := metadata.MD{}
	for k, v := range c.MD {
		out[k] = v
	}
	if token != "" {
		out.Set("authorization", "Bearer "+token)
	}
	return Call{Conn: c.Conn, Ctx: metadata.NewOutgoingContext(context.Background(), out),
		Method: md.FullMethod(), Req: req, Resp: resp}
}

// Invoke makes the call.
func (c Call) Invoke() error {
	ctx, cancel := context.WithTimeout(c.Ctx, 10*time.Second)
	defer cancel()
	return c.Conn.Invoke(ctx, c.Method, c.Req, c.Resp)
}

// Get walks a decoded JSON value by keys and indexes, e.g.
// Get(b, "record", "revision").
func Get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

// Str, Num and List are Get's value as a string, a number or a list (the
// zero value when it is not one).
func Str(v any, path ...any) string  { s, _ := Get(v, path...).(string); return s }
func Num(v any, path ...any) float64 { f, _ := Get(v, path...).(float64); return f }
func List(v any, path ...any) []any  { a, _ := Get(v, path...).([]any); return a }
