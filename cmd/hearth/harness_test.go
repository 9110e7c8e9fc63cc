package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/gateway"
	"github.com/hearth-memory/hearth/server/options"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// readerIP is the source address of the address client "lan-reader" in
// test daemons. Linux routes all of 127.0.0.0/8 to loopback, so a test
// client can bind it.
var readerIP = netip.MustParseAddr("127.0.0.2")

// testOptions are the defaults plus an address client that is configured
// with write scope (which it must not get) and a token client that can only
// read.
func testOptions() options.Options {
	o := options.Default()
	o.Clients = append(o.Clients,
		options.Client{Name: "lan-reader", Scopes: []options.Scope{"read", "write"}, IP: readerIP},
	)
	return o
}

type testDaemon struct {
	*Daemon
	url    string
	tokens map[string]string
	conn   *grpc.ClientConn
}

// startDaemon runs a whole daemon on 127.0.0.1:0 over a temp data dir; it
// closes when the test ends.
func startDaemon(tb testing.TB, opts options.Options) *testDaemon {
	tb.Helper()
	return openDaemon(tb, &Daemon{Config: Config{DataDir: tb.TempDir(), Options: opts}}, true)
}

// openDaemon opens d (on 127.0.0.1:0 unless d.Config.Listen is set, with a
// discarding log unless d.Log is set), reads its generated tokens and dials
// it over gRPC. With autoClose the daemon and the connection close when the
// test ends; without, the test closes them with closeDaemon (to open the
// same data dir again).
func openDaemon(tb testing.TB, d *Daemon, autoClose bool) *testDaemon {
	tb.Helper()
	if d.Config.Listen == "" {
		d.Config.Listen = "127.0.0.1:0"
	}
	if d.Log == nil {
		d.Log = discardLog()
	}
	if err := d.Open(context.Background()); err != nil {
		tb.Fatalf("open daemon: %v", err)
	}
	td := &testDaemon{Daemon: d, url: "http://" + d.Addr(), tokens: map[string]string{}}
	entries, _ := os.ReadDir(d.TokensDir())
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(d.TokensDir(), e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		td.tokens[e.Name()] = strings.TrimSpace(string(b))
	}
	td.conn = dialGRPC(tb, d.Addr())
	if autoClose {
		tb.Cleanup(func() {
			td.conn.Close()
			d.Close(context.Background())
		})
	}
	return td
}

// closeDaemon closes a daemon opened without autoClose.
func closeDaemon(tb testing.TB, td *testDaemon) {
	tb.Helper()
	td.conn.Close()
	if err := td.Close(context.Background()); err != nil {
		tb.Fatalf("close daemon: %v", err)
	}
}

// result is one call's outcome, the same shape for every transport.
type result struct {
	ok   bool
	code string // gRPC code name on failure, e.g. ABORTED
	http int    // HTTP status (REST), or the http_status of the error body
	raw  []byte // the JSON result or error body
	body map[string]any
}

func (r result) String() string {
	return fmt.Sprintf("ok=%v code=%s http=%d body=%s", r.ok, r.code, r.http, r.raw)
}

func decodeResult(r *result) {
	r.body = map[string]any{}
	_ = json.Unmarshal(r.raw, &r.body)
	if e, ok := r.body["error"].(map[string]any); ok && !r.ok {
		r.code, _ = e["code"].(string)
		if r.http == 0 {
			if f, ok := e["http_status"].(float64); ok {
				r.http = int(f)
			}
		}
	}
}

// transport calls a tool by name with JSON arguments as one client kind.
type transport interface {
	name() string
	call(tb testing.TB, token, tool string, args any) result
}

type restTransport struct{ td *testDaemon }

func (restTransport) name() string { return "rest" }

func (c restTransport) call(tb testing.TB, token, tool string, args any) result {
	tb.Helper()
	b, _ := json.Marshal(args)
	req, _ := http.NewRequest(http.MethodPost, c.td.url+"/api/"+tool, bytes.NewReader(b))
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
	r := result{ok: resp.StatusCode == http.StatusOK, http: resp.StatusCode, raw: raw}
	decodeResult(&r)
	return r
}

type mcpTransport struct {
	td     *testDaemon
	client *http.Client // nil: http.DefaultClient
}

func (mcpTransport) name() string { return "mcp" }

// rpc posts one JSON-RPC request to /mcp and returns the HTTP response body.
func (c mcpTransport) rpc(tb testing.TB, token string, method string, params any) (int, []byte) {
	tb.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
	b, _ := json.Marshal(msg)
	req, _ := http.NewRequest(http.MethodPost, c.td.url+"/mcp", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	hc := c.client
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

func (c mcpTransport) call(tb testing.TB, token, tool string, args any) result {
	tb.Helper()
	code, raw := c.rpc(tb, token, "tools/call", map[string]any{"name": tool, "arguments": args})
	if code == http.StatusUnauthorized {
		// The bridge refuses an unknown caller before any MCP method runs,
		// with the same error body as REST.
		r := result{raw: raw, http: code}
		decodeResult(&r)
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
	r := result{ok: !env.Result.IsError, raw: []byte(env.Result.Content[0].Text)}
	decodeResult(&r)
	if r.ok {
		r.http = http.StatusOK
	}
	return r
}

type grpcTransport struct {
	td *testDaemon
	md metadata.MD // extra metadata, e.g. a forged x-forwarded-for
}

func (grpcTransport) name() string { return "grpc" }

// methodOf finds the RPC whose tool option carries name.
func methodOf(tb testing.TB, tool string) gateway.Route {
	for _, r := range routes(tb) {
		if r.Tool.GetName() == tool {
			return r
		}
	}
	tb.Fatalf("no RPC for tool %s", tool)
	return gateway.Route{}
}

// routes returns every RPC as the transports offer it.
func routes(tb testing.TB) []gateway.Route {
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

func (c grpcTransport) call(tb testing.TB, token, tool string, args any) result {
	tb.Helper()
	call := c.prepare(tb, token, tool, args)
	resp := call.resp
	err := call.invoke()
	if err != nil {
		if _, ok := status.FromError(err); !ok {
			tb.Fatalf("grpc %s: %v", tool, err)
		}
		httpStatus, raw := gateway.ErrorJSON(err)
		r := result{raw: raw, http: httpStatus}
		decodeResult(&r)
		return r
	}
	raw, err := gateway.MarshalResult(resp)
	if err != nil {
		tb.Fatal(err)
	}
	r := result{ok: true, http: http.StatusOK, raw: raw}
	decodeResult(&r)
	return r
}

func transports(td *testDaemon) []transport {
	return []transport{restTransport{td}, mcpTransport{td: td}, grpcTransport{td: td}}
}

// dialFrom returns an HTTP client whose connections come from local address ip.
func dialFrom(ip netip.Addr) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip.AsSlice()}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// get walks a decoded JSON value by keys and indexes, e.g. get(b, "record", "revision").
func get(v any, path ...any) any {
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

func str(v any, path ...any) string  { s, _ := get(v, path...).(string); return s }
func num(v any, path ...any) float64 { f, _ := get(v, path...).(float64); return f }
func list(v any, path ...any) []any  { a, _ := get(v, path...).([]any); return a }

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// dialGRPC opens a plaintext gRPC client connection to addr.
func dialGRPC(tb testing.TB, addr string) *grpc.ClientConn {
	tb.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	return conn
}

// freePort returns a TCP port that was free a moment ago.
func freePort(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// grpcCall is one gRPC call made ready: its request built from JSON
// arguments and its metadata set before a benchmark's clock starts, so
// that what is timed is the call as a gRPC client makes it, not the
// harness turning JSON into messages and back.
type grpcCall struct {
	conn      *grpc.ClientConn
	ctx       context.Context
	method    string
	req, resp proto.Message
}

// prepare readies a call of tool with args, with the transport's extra
// metadata; call makes it and decodes the reply.
func (c grpcTransport) prepare(tb testing.TB, token, tool string, args any) grpcCall {
	tb.Helper()
	md := methodOf(tb, tool)
	req, resp := newMessage(tb, md.Method.Input()), newMessage(tb, md.Method.Output())
	b, _ := json.Marshal(args)
	if err := protojson.Unmarshal(b, req); err != nil {
		tb.Fatalf("grpc %s: arguments: %v", tool, err)
	}
	out := metadata.MD{}
	for k, v := range c.md {
		out[k] = v
	}
	if token != "" {
		out.Set("authorization", "Bearer "+token)
	}
	return grpcCall{conn: c.td.conn, ctx: metadata.NewOutgoingContext(context.Background(), out),
		method: md.FullMethod(), req: req, resp: resp}
}

// invoke makes the call.
func (c grpcCall) invoke() error {
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	return c.conn.Invoke(ctx, c.method, c.req, c.resp)
}
