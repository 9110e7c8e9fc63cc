package main

import (
	"net/http"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/server/servertest"
)

// The daemon's tests call its port with servertest's transports, the
// same clients the server's own tests use on the harness (docs/design.md
// §19); these names keep the daemon's tests as they were written.

// readerIP is the source address of the address client "lan-reader".
var readerIP = servertest.ReaderIP

// testOptions are the defaults plus lan-reader (servertest.Options).
func testOptions() options.Options { return servertest.Options() }

// parityOptions give claude-code every scope (servertest.ParityOptions).
func parityOptions() options.Options { return servertest.ParityOptions() }

var (
	dialFrom = servertest.DialFrom
	routes   = servertest.Routes
	get      = servertest.Get
	str      = servertest.Str
	num      = servertest.Num
	list     = servertest.List
	// closeArgs are memory_session_close arguments.
	closeArgs = servertest.CloseArgs
	// anchoredArgs is a store request with anchors.
	anchoredArgs = servertest.AnchoredArgs
	// anchorState returns the state of anchor in a record's JSON.
	anchorState = servertest.AnchorState
	// auditEntries returns the store's audit rows of action, newest first.
	auditEntries = servertest.AuditEntries
	// withoutDiskFigures is a memory_status body without the figures that
	// move by themselves.
	withoutDiskFigures = servertest.WithoutDiskFigures
)

// result is one call's outcome (servertest.Result).
type result struct {
	ok   bool
	code string
	http int
	raw  []byte
	body map[string]any
}

func (r result) String() string { return r.st().String() }

func (r result) st() servertest.Result {
	return servertest.Result{OK: r.ok, Code: r.code, HTTP: r.http, Raw: r.raw, Body: r.body}
}

func fromST(r servertest.Result) result {
	return result{ok: r.OK, code: r.Code, http: r.HTTP, raw: r.Raw, body: r.Body}
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
	return fromST(servertest.REST{URL: c.td.url}.Call(tb, token, tool, args))
}

type mcpTransport struct {
	td     *testDaemon
	client *http.Client // nil: http.DefaultClient
}

func (mcpTransport) name() string { return "mcp" }

func (c mcpTransport) st() servertest.MCP { return servertest.MCP{URL: c.td.url, Client: c.client} }

// rpc posts one JSON-RPC request to /mcp and returns the HTTP response body.
func (c mcpTransport) rpc(tb testing.TB, token string, method string, params any) (int, []byte) {
	tb.Helper()
	return c.st().RPC(tb, token, method, params)
}

func (c mcpTransport) call(tb testing.TB, token, tool string, args any) result {
	tb.Helper()
	return fromST(c.st().Call(tb, token, tool, args))
}

type grpcTransport struct {
	td *testDaemon
	md metadata.MD // extra metadata, e.g. a forged x-forwarded-for
}

func (grpcTransport) name() string { return "grpc" }

func (c grpcTransport) st() servertest.GRPC { return servertest.GRPC{Conn: c.td.conn, MD: c.md} }

func (c grpcTransport) call(tb testing.TB, token, tool string, args any) result {
	tb.Helper()
	return fromST(c.st().Call(tb, token, tool, args))
}

// grpcCall is one gRPC call made ready before a benchmark's clock starts
// (servertest.Call).
type grpcCall struct{ servertest.Call }

// prepare readies a call of tool with args; invoke makes it.
func (c grpcTransport) prepare(tb testing.TB, token, tool string, args any) grpcCall {
	tb.Helper()
	return grpcCall{c.st().Prepare(tb, token, tool, args)}
}

func (c grpcCall) invoke() error { return c.Invoke() }

func transports(td *testDaemon) []transport {
	return []transport{restTransport{td}, mcpTransport{td: td}, grpcTransport{td: td}}
}

// sameRecords is servertest.SameRecords.
func sameRecords(a, b result) bool { return servertest.SameRecords(a.st(), b.st()) }

// testClock is a clock tests move by hand (servertest.Clock).
type testClock = servertest.Clock

var newTestClock = servertest.NewClock

// startDaemonAt is startDaemon with the store's clock injected before the
// daemon opens, so the usage-start mark is on that clock too.
func startDaemonAt(tb testing.TB, opts options.Options, clock *testClock) *testDaemon {
	tb.Helper()
	return openDaemon(tb, &Daemon{Config: Config{DataDir: tb.TempDir(), Options: opts}, Now: clock.Now}, true)
}

// must fails the test unless r succeeded, and returns its body.
func must(tb testing.TB, what string, r result) map[string]any {
	tb.Helper()
	return servertest.Must(tb, what, r.st())
}

// awaitAnswer polls memory_answer (REST) for the question text in ns until
// the worker has answered it, and returns the answer.
func awaitAnswer(tb testing.TB, td *testDaemon, tok, ns, text string) map[string]any {
	tb.Helper()
	return servertest.AwaitAnswer(tb, td.db, servertest.REST{URL: td.url}, tok, ns, text)
}

// seedReceipt stores an extraction receipt of a close in ns, once per
// daemon, and returns its id.
func seedReceipt(t *testing.T, td *testDaemon, ns string) string {
	t.Helper()
	return servertest.SeedReceipt(t, td.db, ns)
}

// questionIn returns the question of memory_questions in ns with the text.
func questionIn(tb testing.TB, td *testDaemon, tok, ns, text string) map[string]any {
	tb.Helper()
	return servertest.QuestionIn(tb, td.db, servertest.REST{URL: td.url}, tok, ns, text)
}
