package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/hearth-memory/hearth/gateway"
	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
)

// ServerName is the serverInfo name the bridge reports.
const ServerName = "hearth"

// MaxDescription is the longest tool description or instructions text, in
// bytes: Claude Code cuts at 2,048 characters (docs/design.md R-T11), and a byte count
// is never below the character count.
const MaxDescription = 2048

// New returns the MCP endpoint: a stateless streamable-HTTP MCP server whose
// tools are the hearth.v1 RPCs (see gateway.Routes), each call invoked over
// conn. version is reported as serverInfo.version.
//
// The handler answers POST only (GET and DELETE, the SSE stream and session
// end, get 405 with Allow: POST), always with application/json. It is
// mounted behind gateway.Boundary, as every HTTP route is (the daemon wraps
// its whole mux once), which refuses browser requests. It fails when the descriptors do not make valid tools: an RPC
// without a tool option, a duplicate name, a description over
// MaxDescription.
func New(conn grpc.ClientConnInterface, version string, opts ...Option) (http.Handler, error) {
	var o settings
	for _, opt := range opts {
		opt(&o)
	}
	routes, err := gateway.Routes()
	if err != nil {
		return nil, err
	}
	tools := make([]server.ServerTool, 0, len(routes))
	scopes := make(map[string]string, len(routes))
	for _, r := range routes {
		tool, err := toolFor(r)
		if err != nil {
			return nil, err
		}
		tools = append(tools, server.ServerTool{Tool: tool, Handler: callHandler(conn, r, version)})
		scopes[tool.Name] = scopeName(r.Scope())
	}
	// mcp-go hands the JSON-RPC id it parsed (and will write back) to this
	// hook before the tool runs; the reply's size depends on it.
	hooks := &server.Hooks{}
	hooks.AddBeforeCallTool(func(ctx context.Context, id any, _ *mcp.CallToolRequest) {
		if c, ok := ctx.Value(callerKey{}).(*caller); ok {
			c.id = id
		}
	})
	hooks.AddAfterListTools(listFor(conn, scopes))
	s := server.NewMCPServer(ServerName, version,
		server.WithInstructions(Instructions),
		// The tool list is fixed for the process's life.
		server.WithToolCapabilities(false),
		server.WithRecovery(),
		server.WithHooks(hooks),
	)
	s.AddTools(tools...)
	streamable := server.NewStreamableHTTPServer(s,
		server.WithStateLess(true),
		server.WithHTTPContextFunc(withCaller),
		// mcp-go refuses a request that arrives on a loopback connection
		// with a non-loopback Host (DNS rebinding). LAN clients are never
		// affected (their connection's local address is the LAN address),
		// but a reverse proxy on the same host that keeps the Host header
		// would be. Browsers, the only DNS-rebinding vector, send an Origin
		// header on every POST, and gateway.Boundary refuses those.
		server.WithDisableLocalhostProtection(true),
		server.WithDisableStreaming(true),
	)
	return postOnly(validIDs(identified(conn, o.check, streamable))), nil
}

// Option changes what New makes.
type Option func(*settings)

type settings struct {
	check CallerCheck
}

// CallerCheck decides whether a request with these Authorization values
// from addr (the host of its remote address) has a known caller, as the
// server would answer a call of memory_whoami: nil, or the error such a
// call would get (UNAUTHENTICATED for an unknown caller). It must refuse a rotated
// token from the moment of the rotation, as the interceptor does.
type CallerCheck func(ctx context.Context, authorization []string, addr string) error

// WithCallerCheck has the bridge ask check, instead of memory_whoami over
// conn, about a request no tool call has vouched for (see identified):
// the same verdict without an RPC.
func WithCallerCheck(check CallerCheck) Option {
	return func(o *settings) { o.check = check }
}

// identified answers 401 UNAUTHENTICATED, with a bearer challenge and no
// OAuth metadata, to any request whose caller the server does not know,
// initialize and tools/list included, so a client is told at connect time
// rather than inside every tool result. The decision is the interceptor's,
// made before any answer is written: a tool call's own RPC carries the
// request's credentials and address through it, and its success is the
// check (every tool is a hearth.v1 RPC that declares a scope, never one
// of the interceptor's public methods, so a success means a known caller,
// and a tool call that succeeds costs no second call); any other
// request, or a tool call that failed otherwise, is checked by
// memory_whoami over conn (or by ask, when set: the interceptor's own
// decision, without an RPC) as its answer is about to be written. Only an
// UNAUTHENTICATED verdict replaces the answer (a known caller lacking a
// tool's scope learns so from that tool); any other failure to ask is
// answered with its own code.
func identified(conn grpc.ClientConnInterface, ask CallerCheck, next http.Handler) http.Handler {
	admin := hearthv1.NewAdminServiceClient(conn)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chk := &check{}
		cw := &checkedWriter{w: w, chk: chk, verify: func() error {
			if ask != nil {
				c := callerOf(r)
				return ask(r.Context(), c.authorization, c.addr)
			}
			_, err := whoami(r.Context(), admin, callerOf(r))
			if status.Code(err) == codes.PermissionDenied {
				return nil
			}
			return err
		}}
		next.ServeHTTP(cw, r.WithContext(context.WithValue(r.Context(), checkKey{}, chk)))
		if !cw.wrote {
			// Nothing was answered: the verdict is the whole answer.
			cw.WriteHeader(http.StatusOK)
		}
	})
}

// check is what a request's tool calls learned of its caller: that the
// interceptor let one of them through, or the UNAUTHENTICATED verdict one
// met.
type check struct {
	mu      sync.Mutex
	known   bool
	refusal error
}

type checkKey struct{}

// noteCall records what the RPC of a tool call says of the caller: a
// success that the interceptor let it through, UNAUTHENTICATED that it is
// unknown; any other outcome says nothing for sure (the call may have
// failed before it was checked).
func noteCall(ctx context.Context, err error) {
	chk, ok := ctx.Value(checkKey{}).(*check)
	if !ok {
		return
	}
	chk.mu.Lock()
	defer chk.mu.Unlock()
	switch status.Code(err) {
	case codes.OK:
		chk.known = true
	case codes.Unauthenticated:
		chk.refusal = err
	}
}

// checkedWriter holds a request's answer back until its caller is known:
// at the first WriteHeader or Write, a caller no tool call has vouched for
// is asked about (verify), and an unknown one gets the 401 instead of the
// answer, whose bytes are then dropped.
type checkedWriter struct {
	w       http.ResponseWriter
	chk     *check
	verify  func() error
	wrote   bool
	refused bool
}

func (c *checkedWriter) Header() http.Header { return c.w.Header() }

func (c *checkedWriter) WriteHeader(code int) {
	if c.wrote {
		return
	}
	c.wrote = true
	c.chk.mu.Lock()
	known, refusal := c.chk.known, c.chk.refusal
	c.chk.mu.Unlock()
	// One tool call let through vouches for the caller whatever another
	// met; a caller no call has judged stands by memory_whoami's verdict.
	if !known && refusal == nil {
		refusal = c.verify()
	}
	if !known && refusal != nil {
		c.refused = true
		clear(c.w.Header())
		gateway.WriteError(c.w, refusal)
		return
	}
	c.w.WriteHeader(code)
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	if !c.wrote {
		c.WriteHeader(http.StatusOK)
	}
	if c.refused {
		return len(p), nil
	}
	return c.w.Write(p)
}

// listFor narrows a tools/list result to the tools the caller's scopes can
// call, as memory_whoami reports them (scopes maps a tool's name to the
// scope its RPC declares). The list is a view, not a decision: the
// interceptor still authorizes every call, a tool left out of the list
// included. The memory_whoami call is also the request's identity check
// (see identified): an unknown caller gets the 401. A caller whoami cannot
// answer for (known, but without the read scope it needs) is shown every
// tool, as before.
func listFor(conn grpc.ClientConnInterface, scopes map[string]string) func(context.Context, any, *mcp.ListToolsRequest, *mcp.ListToolsResult) {
	admin := hearthv1.NewAdminServiceClient(conn)
	return func(ctx context.Context, _ any, _ *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
		var c caller
		if p, ok := ctx.Value(callerKey{}).(*caller); ok {
			c = *p
		}
		who, err := whoami(ctx, admin, c)
		noteCall(ctx, err)
		if err != nil {
			return
		}
		held := make(map[string]bool, len(who.GetScopes()))
		for _, s := range who.GetScopes() {
			held[s] = true
		}
		kept := res.Tools[:0]
		for _, t := range res.Tools {
			if held[scopes[t.Name]] {
				kept = append(kept, t)
			}
		}
		res.Tools = kept
	}
}

// whoami asks memory_whoami about caller c, as an MCP call.
func whoami(ctx context.Context, admin hearthv1.AdminServiceClient, c caller) (*hearthv1.WhoamiResponse, error) {
	md := c.metadata()
	md.Set(gateway.WireMetadata, gateway.WireMCP)
	return admin.Whoami(metadata.NewOutgoingContext(ctx, md), &hearthv1.WhoamiRequest{})
}

// scopeName is the name memory_whoami reports for a declared scope:
// SCOPE_READ is "read".
func scopeName(s hearthv1.Scope) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "SCOPE_"))
}

// toolFor builds the MCP tool of an RPC from its descriptors: the
// description is the first paragraph of the RPC's comment (Brief).
func toolFor(r gateway.Route) (mcp.Tool, error) {
	desc := Brief(hearthv1.Docs[string(r.Method.FullName())])
	if len(desc) > MaxDescription {
		return mcp.Tool{}, fmt.Errorf("mcpbridge: tool %s: description is %d bytes, over %d", r.Tool.GetName(), len(desc), MaxDescription)
	}
	schema, err := inputSchema(r.Method.Input())
	if err != nil {
		return mcp.Tool{}, fmt.Errorf("mcpbridge: tool %s: %w", r.Tool.GetName(), err)
	}
	t := r.Tool
	// No title: the name is what a model calls, and a client shows the
	// name where a title is absent; the option's title names the REST
	// operation (OpenAPI) and the audit.
	return mcp.Tool{
		Name:           t.GetName(),
		Description:    desc,
		RawInputSchema: schema,
		Annotations:    Hints(t),
	}, nil
}

// Hints are a tool's annotation hints as sent. A client reads an absent
// hint as the MCP default (not read-only, destructive, not idempotent,
// open-world), and destructive and idempotent as meaningless for a
// read-only tool; so a hint is sent only where it says something else, and
// every hint a client reads holds the tool option's value.
func Hints(t *hearthv1.Tool) mcp.ToolAnnotation {
	var a mcp.ToolAnnotation
	if t.GetReadOnly() {
		a.ReadOnlyHint = proto.Bool(true)
	} else {
		if !t.GetDestructive() {
			a.DestructiveHint = proto.Bool(false)
		}
		if t.GetIdempotent() {
			a.IdempotentHint = proto.Bool(true)
		}
	}
	if !t.GetOpenWorld() {
		a.OpenWorldHint = proto.Bool(false)
	}
	return a
}

// callHandler invokes r's RPC over conn with the tool call's arguments.
//
// Every outcome the caller can act on is a tool result, so the model sees
// it: the RPC's response as the text of gateway.MarshalResult, or, with
// isError, the text of gateway.ErrorJSON for a refused argument or a failed
// RPC. The text is exactly the REST body. There is no structuredContent: it
// would repeat the whole result a second time in the reply, and some replies
// must fit a byte budget (memory_bootstrap: 2,000 bytes for the whole
// JSON-RPC reply). The service meets that budget itself: every call carries
// the wire metadata (see gateway.WireMetadata) with the size of its reply around the
// text.
func callHandler(conn grpc.ClientConnInterface, r gateway.Route, version string) server.ToolHandlerFunc {
	method := r.FullMethod()
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		in, err := decodeArguments(r, req.GetRawArguments())
		if err != nil {
			return errorResult(err), nil
		}
		out := r.NewResponse()
		err = conn.Invoke(outgoingContext(ctx, version), method, in, out)
		noteCall(ctx, err)
		if err != nil {
			return errorResult(err), nil
		}
		body, err := gateway.MarshalResult(out)
		if err != nil {
			return errorResult(status.Error(codes.Internal, "internal error")), nil
		}
		return textResult(ctx, version, string(body)), nil
	}
}

// decodeArguments decodes a tool call's arguments into r's request message.
// Over HTTP mcp-go keeps the arguments' original bytes; anything else (an
// in-process call) is re-encoded first.
func decodeArguments(r gateway.Route, args any) (proto.Message, error) {
	var data []byte
	switch a := args.(type) {
	case nil:
	case json.RawMessage:
		data = a
	case []byte:
		data = a
	default:
		var err error
		if data, err = json.Marshal(a); err != nil {
			return nil, status.Error(codes.InvalidArgument, "arguments are not a JSON object")
		}
	}
	in := r.NewRequest()
	if err := gateway.DecodeRequest(data, in); err != nil {
		return nil, err
	}
	return in, nil
}

// errorResult is the isError tool result for err, holding ErrorJSON's body.
func errorResult(err error) *mcp.CallToolResult {
	_, body := gateway.ErrorJSON(err)
	return &mcp.CallToolResult{
		Content: []mcp.Content{mcp.NewTextContent(string(body))},
		IsError: true,
	}
}

// caller is what the bridge forwards about the HTTP caller, and the
// JSON-RPC id of its request once mcp-go has parsed it.
type caller struct {
	authorization []string
	addr          string
	id            any
}

type callerKey struct{}

// withCaller records the HTTP caller for the tool call.
func withCaller(ctx context.Context, r *http.Request) context.Context {
	c := callerOf(r)
	return context.WithValue(ctx, callerKey{}, &c)
}

// callerOf reads the HTTP caller (gateway.Caller).
func callerOf(r *http.Request) caller {
	var c caller
	c.authorization, c.addr = gateway.Caller(r)
	return c
}

// metadata is the caller's gateway.CallerMetadata.
func (c caller) metadata() metadata.MD { return gateway.CallerMetadata(c.authorization, c.addr) }

// outgoingContext sets the gRPC metadata of a call to exactly the caller's
// (see caller.metadata) and the wire metadata: an MCP reply of
// replyOverhead bytes around the result's text.
func outgoingContext(ctx context.Context, version string) context.Context {
	var c caller
	if p, ok := ctx.Value(callerKey{}).(*caller); ok {
		c = *p
	}
	md := c.metadata()
	md.Set(gateway.WireMetadata, gateway.WireMCP)
	md.Set(gateway.WireOverheadMetadata, strconv.Itoa(replyOverhead(ctx, c.id, version)))
	return metadata.NewOutgoingContext(ctx, md)
}

// postOnly answers anything but POST with 405: the server is stateless and
// JSON-only, so there is no SSE stream to GET and no session to DELETE. It
// hides http.Flusher from mcp-go, which then never switches a reply to SSE.
func postOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			gateway.WriteError(w, &gateway.HTTPError{
				Status:  http.StatusMethodNotAllowed,
				Code:    codes.Unimplemented,
				Message: "the MCP endpoint takes POST only (stateless, JSON replies)",
			})
			return
		}
		next.ServeHTTP(jsonOnly{w}, r)
	})
}

// jsonOnly is a ResponseWriter without Flush. mcp-go answers with SSE only
// when it can flush; without it every reply is one application/json body
// (a notification a tool sends mid-call is dropped, and Hearth's tools send
// none).
type jsonOnly struct {
	w http.ResponseWriter
}

func (j jsonOnly) Header() http.Header         { return j.w.Header() }
func (j jsonOnly) Write(p []byte) (int, error) { return j.w.Write(p) }
func (j jsonOnly) WriteHeader(code int)        { j.w.WriteHeader(code) }
