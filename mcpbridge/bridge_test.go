package mcpbridge_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/hearth-memory/hearth/gateway"
	"github.com/hearth-memory/hearth/gateway/gatewaytest"
	"github.com/hearth-memory/hearth/gateway/rest"
	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/mcpbridge"
	"github.com/hearth-memory/hearth/server/inproc"
)

var update = flag.Bool("update", false, "rewrite testdata/tools.golden.json from the current descriptors")

const testVersion = "9.8.7"

// env is the MCP bridge and the REST gateway over one stand-in backend, the
// way the daemon wires them.
type env struct {
	backend *gatewaytest.Backend
	mcp     http.Handler
	rest    http.Handler
}

// whoami is the method the bridge asks about every request's caller.
const whoami = "/hearth.v1.AdminService/Whoami"

// allScopes are the scopes the stand-in backend's memory_whoami reports by
// default: every tool is listed.
var allScopes = []string{"read", "write", "delete", "export", "admin"}

// newEnv runs the bridge and the REST gateway over a stand-in backend that
// answers tool calls with respond and the bridge's identity check with OK
// and every scope (tests of that check script it with a respond that
// handles whoami).
func newEnv(t *testing.T, respond gatewaytest.Responder) *env {
	t.Helper()
	backend := gatewaytest.New(t, func(method string, req proto.Message) (proto.Message, error) {
		if method == whoami {
			return &hearthv1.WhoamiResponse{Scopes: allScopes}, nil
		}
		if respond == nil {
			return nil, nil
		}
		return respond(method, req)
	})
	m, err := mcpbridge.New(backend.Conn, testVersion)
	if err != nil {
		t.Fatal(err)
	}
	h, err := rest.New(backend.Conn)
	if err != nil {
		t.Fatal(err)
	}
	return &env{backend: backend, mcp: gateway.Boundary(m), rest: gateway.Boundary(h)}
}

// calls returns the calls the backend received, the bridge's identity
// checks left out.
func (e *env) calls() []gatewaytest.Call {
	var out []gatewaytest.Call
	for _, c := range e.backend.Calls() {
		if c.Method != whoami {
			out = append(out, c)
		}
	}
	return out
}

// rpcResponse is a JSON-RPC response.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      any             `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// mcpRequest builds an MCP POST as a client sends it on the wire.
func mcpRequest(t *testing.T, method string, params any) *http.Request {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if method != "initialize" {
		r.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	return r
}

// do sends r to h and decodes the JSON-RPC reply, which must be plain JSON.
func do(t *testing.T, h http.Handler, r *http.Request) (*httptest.ResponseRecorder, rpcResponse) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusOK {
		t.Fatalf("%s: status %d: %s", r.URL.Path, rec.Code, rec.Body)
	}
	if got := rec.Header().Get("Content-Type"); got != "application/json" {
		t.Fatalf("Content-Type = %q, want application/json", got)
	}
	var resp rpcResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
		t.Fatalf("reply %s: %v", rec.Body, err)
	}
	return rec, resp
}

// toolResult is a tools/call result as it travels.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

// callTool calls a tool over MCP and returns the raw result and its text.
func callTool(t *testing.T, h http.Handler, name string, args json.RawMessage, header http.Header) (toolResult, json.RawMessage) {
	t.Helper()
	params := map[string]any{"name": name}
	if args != nil {
		params["arguments"] = args
	}
	r := mcpRequest(t, "tools/call", params)
	for k, v := range header {
		r.Header[k] = v
	}
	_, resp := do(t, h, r)
	if resp.Error != nil {
		t.Fatalf("tools/call %s: JSON-RPC error %d %s", name, resp.Error.Code, resp.Error.Message)
	}
	var res toolResult
	if err := json.Unmarshal(resp.Result, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 || res.Content[0].Type != "text" {
		t.Fatalf("tools/call %s: content %s, want one text", name, resp.Result)
	}
	return res, resp.Result
}

// restPost sends the same arguments to the REST twin.
func restPost(h http.Handler, name, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/api/"+name, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

func TestNew_Initialize(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	rec, resp := do(t, e.mcp, mcpRequest(t, "initialize", map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "test", "version": "0"},
	}))
	var got struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
		Instructions string                     `json:"instructions"`
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal(resp.Result, &got); err != nil {
		t.Fatal(err)
	}
	if got.ServerInfo.Name != "hearth" || got.ServerInfo.Version != testVersion {
		t.Errorf("serverInfo = %+v, want hearth %s", got.ServerInfo, testVersion)
	}
	if got.Instructions != mcpbridge.Instructions {
		t.Errorf("instructions = %q", got.Instructions)
	}
	if got.ProtocolVersion != "2025-11-25" {
		t.Errorf("protocolVersion = %q", got.ProtocolVersion)
	}
	if _, ok := got.Capabilities["tools"]; !ok {
		t.Errorf("no tools capability: %s", resp.Result)
	}
	if id := rec.Header().Get("Mcp-Session-Id"); id != "" {
		t.Errorf("stateless server sent Mcp-Session-Id %q", id)
	}
}

func TestInstructions(t *testing.T) {
	t.Parallel()
	if n := len(mcpbridge.Instructions); n > mcpbridge.MaxDescription {
		t.Errorf("instructions are %d bytes, over %d", n, mcpbridge.MaxDescription)
	}
	if !strings.HasPrefix(mcpbridge.Instructions, "Hearth is") {
		t.Error("instructions do not start with what Hearth is")
	}
	routes, err := gateway.Routes()
	if err != nil {
		t.Fatal(err)
	}
	names := make(map[string]bool)
	for _, r := range routes {
		names[r.Tool.GetName()] = true
	}
	// Every tool the instructions name exists.
	for _, word := range strings.FieldsFunc(mcpbridge.Instructions, func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z')
	}) {
		if strings.HasPrefix(word, "memory_") && !names[word] {
			t.Errorf("instructions name %s, which is not a tool", word)
		}
	}
}

func TestNew_ToolsList(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	// Stateless: tools/list needs no initialize.
	_, resp := do(t, e.mcp, mcpRequest(t, "tools/list", map[string]any{}))

	var pretty bytes.Buffer
	if err := json.Indent(&pretty, resp.Result, "", "  "); err != nil {
		t.Fatal(err)
	}
	pretty.WriteByte('\n')
	golden := filepath.Join("testdata", "tools.golden.json")
	if *update {
		if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./mcpbridge -run TestNew_ToolsList -update)", err)
	}
	if !bytes.Equal(pretty.Bytes(), want) {
		t.Errorf("tools/list differs from %s; if the change is intended, run go test ./mcpbridge -run TestNew_ToolsList -update and review the diff", golden)
	}

	var list struct {
		Tools []struct {
			Name        string                     `json:"name"`
			Title       string                     `json:"title"`
			Description string                     `json:"description"`
			InputSchema map[string]json.RawMessage `json:"inputSchema"`
			Annotations map[string]json.RawMessage `json:"annotations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(resp.Result, &list); err != nil {
		t.Fatal(err)
	}
	routes, err := gateway.Routes()
	if err != nil {
		t.Fatal(err)
	}
	byName := make(map[string]gateway.Route)
	for _, r := range routes {
		byName[r.Tool.GetName()] = r
	}
	if len(list.Tools) != len(routes) {
		t.Errorf("%d tools, want %d (one per RPC)", len(list.Tools), len(routes))
	}
	for _, tool := range list.Tools {
		r, ok := byName[tool.Name]
		if !ok {
			t.Errorf("tool %s has no RPC", tool.Name)
			continue
		}
		if tool.Title != "" || tool.Annotations["title"] != nil {
			t.Errorf("%s: a title is sent (%q, %s); the name is the handle, and every byte costs each client", tool.Name, tool.Title, tool.Annotations["title"])
		}
		if want := mcpbridge.Brief(hearthv1.Docs[string(r.Method.FullName())]); tool.Description != want || want == "" {
			t.Errorf("%s: description %q, want the proto comment's first paragraph %q", tool.Name, tool.Description, want)
		}
		if n := len(tool.Description); n > mcpbridge.MaxDescription {
			t.Errorf("%s: description is %d bytes, over %d", tool.Name, n, mcpbridge.MaxDescription)
		}
		if string(tool.InputSchema["type"]) != `"object"` {
			t.Errorf("%s: inputSchema type %s", tool.Name, tool.InputSchema["type"])
		}
		checkHints(t, tool.Name, r.Tool, tool.Annotations)
	}
}

// mcpDefaults are the values a client reads for an absent hint (MCP's
// ToolAnnotations): the risky ones.
var mcpDefaults = map[string]bool{"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true}

// checkHints holds a tool's hints, as a client reads them (an absent hint
// is MCP's default), to its option; destructive and idempotent mean nothing
// for a read-only tool (MCP), so there they are checked only when sent.
func checkHints(t *testing.T, name string, opt *hearthv1.Tool, sent map[string]json.RawMessage) {
	t.Helper()
	want := map[string]bool{
		"readOnlyHint":    opt.GetReadOnly(),
		"destructiveHint": opt.GetDestructive(),
		"idempotentHint":  opt.GetIdempotent(),
		"openWorldHint":   opt.GetOpenWorld(),
	}
	for hint, w := range want {
		raw, ok := sent[hint]
		got := mcpDefaults[hint]
		switch {
		case ok:
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Errorf("%s: %s = %s", name, hint, raw)
				continue
			}
		case opt.GetReadOnly() && (hint == "destructiveHint" || hint == "idempotentHint"):
			continue
		}
		if got != w {
			t.Errorf("%s: a client reads %s = %v, want %v (sent: %v)", name, hint, got, w, ok)
		}
	}
}

// TestNew_InputSchema checks the derived schema on the shapes Hearth uses.
func TestNew_InputSchema(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	_, resp := do(t, e.mcp, mcpRequest(t, "tools/list", map[string]any{}))
	var list struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(resp.Result, &list); err != nil {
		t.Fatal(err)
	}
	schemas := make(map[string]json.RawMessage)
	for _, tool := range list.Tools {
		schemas[tool.Name] = tool.InputSchema
	}
	type prop struct {
		Type                 any             `json:"type"`
		Format               string          `json:"format"`
		Description          string          `json:"description"`
		Minimum              *float64        `json:"minimum"`
		Items                *prop           `json:"items"`
		Properties           map[string]prop `json:"properties"`
		AdditionalProperties *bool           `json:"additionalProperties"`
	}
	get := func(tool string) prop {
		var p prop
		if err := json.Unmarshal(schemas[tool], &p); err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return p
	}

	store := get("memory_store")
	if store.AdditionalProperties == nil || *store.AdditionalProperties {
		t.Error("memory_store: additionalProperties not false (unknown fields are refused)")
	}
	if p := store.Properties["namespace"]; p.Type != "string" || p.Description != mcpbridge.Brief(hearthv1.Docs["hearth.v1.StoreRequest.namespace"]) || p.Description == "" {
		t.Errorf("memory_store namespace = %+v", p)
	}
	if p := store.Properties["confidence"]; p.Type != "number" {
		t.Errorf("memory_store confidence = %+v", p)
	}
	if p := store.Properties["topics"]; p.Type != "array" || p.Items == nil || p.Items.Type != "string" {
		t.Errorf("memory_store topics = %+v", p)
	}
	// Properties keep the proto's field order: essentials first.
	if i, j := bytes.Index(schemas["memory_store"], []byte(`"namespace"`)), bytes.Index(schemas["memory_store"], []byte(`"supersedes"`)); i < 0 || j < i {
		t.Error("memory_store properties not in field order")
	}

	update := get("memory_update")
	changes := update.Properties["changes"]
	if changes.Type != "object" || changes.Description != mcpbridge.Brief(hearthv1.Docs["hearth.v1.UpdateRequest.changes"]) || changes.Description == "" {
		t.Errorf("memory_update changes = %+v", changes)
	}
	if p := changes.Properties["topics"]; p.Type != "array" || p.Items == nil || p.Items.Type != "string" {
		t.Errorf("changes.topics (ListValue) = %+v, want an array of strings", p)
	}
	// The option's minimum (1) replaces the unsigned type's 0.
	if p := update.Properties["revision"]; p.Type != "integer" || p.Minimum == nil || *p.Minimum != 1 {
		t.Errorf("memory_update revision = %+v", p)
	}

	timeline := get("memory_timeline")
	if p := timeline.Properties["since"]; p.Type != "string" || p.Format != "date-time" {
		t.Errorf("memory_timeline since (Timestamp) = %+v", p)
	}
	// A field only hooks, scripts or the eval set is not offered (the
	// server still takes it: TestNew_ResultParity sends every field).
	search := get("memory_search")
	for _, f := range []string{"recall", "ranking", "min_cosine", "session_id", "exclude", "remote"} {
		if _, ok := search.Properties[f]; ok {
			t.Errorf("memory_search offers %s, which only hooks, scripts or the eval set", f)
		}
	}
	if _, ok := get("memory_namespace").Properties["remote"]; !ok {
		t.Error("memory_namespace does not offer remote, its input")
	}
	// A deprecated field (accepted for compatibility, ignored) is not offered.
	if _, ok := store.Properties["agent"]; ok {
		t.Error("memory_store offers agent, which the server ignores")
	}
	if p := get("memory_status"); p.Type != "object" || len(p.Properties) != 0 {
		t.Errorf("memory_status schema = %+v", p)
	}
}

// populate fills m with a value in every field (one item per list), with
// text that JSON must escape, so parity is tested on more than zeros.
func populate(m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.ContainingOneof() != nil && !fd.HasOptionalKeyword() && fd.ContainingOneof().Fields().Get(0) != fd {
			continue
		}
		if fd.Message() != nil && fd.Message().FullName().Parent() == "google.protobuf" && fd.Message().FullName() != "google.protobuf.Timestamp" {
			continue
		}
		switch {
		case fd.IsMap():
		case fd.IsList():
			l := m.Mutable(fd).List()
			if fd.Message() != nil {
				if depth > 0 {
					e := l.NewElement()
					populate(e.Message(), depth-1)
					l.Append(e)
				}
			} else {
				l.Append(scalar(fd))
			}
		case fd.Message() != nil:
			if depth > 0 {
				populate(m.Mutable(fd).Message(), depth-1)
			}
		default:
			m.Set(fd, scalar(fd))
		}
	}
}

func scalar(fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(`<` + string(fd.Name()) + `> & "ü"`)
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte{1, 2})
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(7)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(7)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(1700000000)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(7)
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(0.25)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(0.75)
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(1)
	}
	return protoreflect.Value{}
}

// TestNew_ResultParity holds R-T9: for every tool, the MCP result text is
// the REST body, byte for byte.
func TestNew_ResultParity(t *testing.T) {
	t.Parallel()
	respond := func(method string, req proto.Message) (proto.Message, error) {
		for _, r := range mustRoutes(t) {
			if r.FullMethod() == method {
				resp := r.NewResponse()
				populate(resp.ProtoReflect(), 3)
				return resp, nil
			}
		}
		return nil, status.Error(codes.Unimplemented, method)
	}
	e := newEnv(t, respond)
	for _, r := range mustRoutes(t) {
		t.Run(r.Tool.GetName(), func(t *testing.T) {
			rest := restPost(e.rest, r.Tool.GetName(), "{}")
			if rest.Code != http.StatusOK {
				t.Fatalf("REST %d %s", rest.Code, rest.Body)
			}
			res, raw := callTool(t, e.mcp, r.Tool.GetName(), json.RawMessage(`{}`), nil)
			if res.IsError {
				t.Fatalf("isError: %s", raw)
			}
			if got := res.Content[0].Text; got != rest.Body.String() {
				t.Errorf("MCP text differs from the REST body:\nMCP  %s\nREST %s", got, rest.Body)
			}
			if bytes.Contains(raw, []byte("structuredContent")) {
				t.Errorf("result repeats itself as structuredContent: %s", raw)
			}
		})
	}

	t.Run("NoArguments", func(t *testing.T) {
		res, raw := callTool(t, e.mcp, "memory_status", nil, nil)
		if res.IsError {
			t.Errorf("isError: %s", raw)
		}
	})
}

func mustRoutes(t *testing.T) []gateway.Route {
	t.Helper()
	routes, err := gateway.Routes()
	if err != nil {
		t.Fatal(err)
	}
	return routes
}

// TestNew_ErrorParity holds R-T10: a failed call is an isError result whose
// text is exactly the REST error body.
func TestNew_ErrorParity(t *testing.T) {
	t.Parallel()
	conflict, err := status.New(codes.Aborted, "revision 2 is not current").WithDetails(&hearthv1.ErrorDetail{
		CurrentRevision: 3,
		Record:          &hearthv1.Record{Id: "r1", Revision: 3, Title: "<current>", Topics: []string{"db"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	rpcErrors := []struct {
		name string
		err  error
		http int
	}{
		{"Aborted", conflict.Err(), 409},
		{"Unauthenticated", status.Error(codes.Unauthenticated, "unknown caller"), 401},
		{"PermissionDenied", status.Error(codes.PermissionDenied, "scope write needed"), 403},
		{"Internal", status.Error(codes.Internal, "internal error"), 500},
	}
	for _, tt := range rpcErrors {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(string, proto.Message) (proto.Message, error) { return nil, tt.err })
			args := `{"id":"r1","revision":2,"changes":{"title":"t"}}`
			rest := restPost(e.rest, "memory_update", args)
			if rest.Code != tt.http {
				t.Errorf("REST status %d, want %d", rest.Code, tt.http)
			}
			if tt.http == http.StatusUnauthorized {
				// An unknown caller is answered at the HTTP level, as
				// over REST: the same status and the same body.
				rec := httptest.NewRecorder()
				e.mcp.ServeHTTP(rec, mcpRequest(t, "tools/call", map[string]any{"name": "memory_update", "arguments": json.RawMessage(args)}))
				if rec.Code != rest.Code || rec.Body.String() != rest.Body.String() {
					t.Errorf("MCP %d %s, want the REST reply %d %s", rec.Code, rec.Body, rest.Code, rest.Body)
				}
				return
			}
			res, raw := callTool(t, e.mcp, "memory_update", json.RawMessage(args), nil)
			if !res.IsError {
				t.Fatalf("isError not set: %s", raw)
			}
			if got := res.Content[0].Text; got != rest.Body.String() {
				t.Errorf("MCP text differs from the REST body:\nMCP  %s\nREST %s", got, rest.Body)
			}
		})
	}

	decodeErrors := []struct {
		name, tool, args, field string
	}{
		{"ErrUnknownField", "memory_store", `{"namespace":"global","titel":"x"}`, "titel"},
		{"ErrNestedType", "memory_update", `{"id":"r","changes":{"confidence":"high"}}`, "changes.confidence"},
		{"ErrNotObject", "memory_search", `["query"]`, ""},
		{"ErrWrongType", "memory_get", `{"ids":"abc"}`, "ids"},
	}
	for _, tt := range decodeErrors {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			rest := restPost(e.rest, tt.tool, tt.args)
			if rest.Code != http.StatusBadRequest {
				t.Errorf("REST status %d, want 400", rest.Code)
			}
			res, raw := callTool(t, e.mcp, tt.tool, json.RawMessage(tt.args), nil)
			if !res.IsError {
				t.Fatalf("isError not set: %s", raw)
			}
			text := res.Content[0].Text
			if text != rest.Body.String() {
				t.Errorf("MCP text differs from the REST body:\nMCP  %s\nREST %s", text, rest.Body)
			}
			var body struct {
				Error struct {
					Code  string `json:"code"`
					Field string `json:"field"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(text), &body); err != nil {
				t.Fatal(err)
			}
			if body.Error.Code != "INVALID_ARGUMENT" || body.Error.Field != tt.field {
				t.Errorf("error = %+v, want INVALID_ARGUMENT field %q", body.Error, tt.field)
			}
			if n := len(e.calls()); n != 0 {
				t.Errorf("backend called %d times", n)
			}
		})
	}

	t.Run("ErrUnknownToolIsProtocolError", func(t *testing.T) {
		e := newEnv(t, nil)
		_, resp := do(t, e.mcp, mcpRequest(t, "tools/call", map[string]any{"name": "memory_nothing"}))
		if resp.Error == nil {
			t.Errorf("unknown tool gave result %s, want a JSON-RPC error", resp.Result)
		}
	})
}

func TestNew_CallerIdentity(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	callTool(t, e.mcp, "memory_status", json.RawMessage(`{}`), http.Header{
		"Authorization":   {"Bearer tok"},
		"X-Forwarded-For": {"10.9.9.9"},
		"X-Real-Ip":       {"10.9.9.8"},
	})
	callTool(t, e.mcp, "memory_status", json.RawMessage(`{}`), nil)
	calls := e.calls()
	if len(calls) != 2 {
		t.Fatalf("%d calls, want 2", len(calls))
	}
	md := calls[0].Metadata
	if got := md.Get("authorization"); !slices.Equal(got, []string{"Bearer tok"}) {
		t.Errorf("authorization = %q", got)
	}
	// The remote address only (httptest: 192.0.2.1); what the client
	// claimed is not forwarded.
	if got := md.Get("x-forwarded-for"); !slices.Equal(got, []string{"192.0.2.1"}) {
		t.Errorf("x-forwarded-for = %q, want [192.0.2.1]", got)
	}
	if got := md.Get("x-real-ip"); len(got) != 0 {
		t.Errorf("x-real-ip forwarded: %q", got)
	}
	if got := calls[1].Metadata.Get("authorization"); len(got) != 0 {
		t.Errorf("call without Authorization carried %q (leaked between calls?)", got)
	}
	if got := calls[0].Peer.Network(); got != inproc.Network {
		t.Errorf("peer network = %q, want %q", got, inproc.Network)
	}
}

func TestNew_HTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)

	for _, method := range []string{http.MethodGet, http.MethodDelete, http.MethodHead, http.MethodPut} {
		t.Run("Err"+method, func(t *testing.T) {
			r := httptest.NewRequest(method, "/mcp", nil)
			r.Header.Set("Accept", "text/event-stream")
			rec := httptest.NewRecorder()
			e.mcp.ServeHTTP(rec, r)
			if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != http.MethodPost {
				t.Errorf("status %d, Allow %q; want 405, POST", rec.Code, rec.Header().Get("Allow"))
			}
		})
	}

	t.Run("ErrOrigin", func(t *testing.T) {
		r := mcpRequest(t, "tools/list", map[string]any{})
		r.Header.Set("Origin", "http://evil.example")
		rec := httptest.NewRecorder()
		e.mcp.ServeHTTP(rec, r)
		if rec.Code != http.StatusForbidden {
			t.Errorf("status %d, want 403", rec.Code)
		}
	})

	t.Run("ErrContentType", func(t *testing.T) {
		r := mcpRequest(t, "tools/list", map[string]any{})
		r.Header.Set("Content-Type", "text/plain")
		rec := httptest.NewRecorder()
		e.mcp.ServeHTTP(rec, r)
		if rec.Code != http.StatusUnsupportedMediaType {
			t.Errorf("status %d, want 415", rec.Code)
		}
	})
}

// TestNew_Wire runs the bridge on a real loopback listener, whose
// ResponseWriter can flush (mcp-go would then be free to answer with SSE).
func TestNew_Wire(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	srv := httptest.NewServer(e.mcp)
	t.Cleanup(srv.Close)

	send := func(t *testing.T, host string, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}

	t.Run("CallIsPlainJSON", func(t *testing.T) {
		resp := send(t, "", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"wal"}}}`)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d %s", resp.StatusCode, body)
		}
		if got := resp.Header.Get("Content-Type"); got != "application/json" {
			t.Errorf("Content-Type = %q, want application/json", got)
		}
		var r rpcResponse
		if err := json.Unmarshal(body, &r); err != nil || r.Error != nil || r.ID != 7.0 {
			t.Errorf("reply %s (%v)", body, err)
		}
		calls := e.calls()
		if got := calls[len(calls)-1].Metadata.Get("x-forwarded-for"); !slices.Equal(got, []string{"127.0.0.1"}) {
			t.Errorf("x-forwarded-for = %q, want [127.0.0.1]", got)
		}
	})

	t.Run("LANHostOnLoopback", func(t *testing.T) {
		// mcp-go's DNS-rebinding guard would refuse a non-loopback Host on
		// a loopback connection with 403 (a proxy on the same box); LAN
		// clients must work, and Origin is what refuses browsers.
		resp := send(t, "192.168.1.20:8765", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(resp.Body)
			t.Errorf("status %d %s, want 200", resp.StatusCode, body)
		}
	})
}

// TestNew_Identified: the bridge has the server judge every request's
// caller, with the caller's credentials and address, and answers an
// UNAUTHENTICATED verdict with HTTP 401 and a bare bearer challenge (no
// OAuth metadata) instead of any MCP answer, initialize and tools/list
// included. A tool call that succeeds is its own check: no memory_whoami
// beside it. A known caller without a scope is let through; the tool says
// so.
func TestNew_Identified(t *testing.T) {
	t.Parallel()
	var verdict atomic.Pointer[error]
	unauthenticated := status.Error(codes.Unauthenticated, "unauthenticated: unknown token")
	verdict.Store(&unauthenticated)
	// The interceptor's verdict holds for every method, as it does in the
	// server.
	backend := gatewaytest.New(t, func(method string, _ proto.Message) (proto.Message, error) {
		return nil, *verdict.Load()
	})
	m, err := mcpbridge.New(backend.Conn, testVersion)
	if err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{"initialize", "tools/list", "tools/call", "ping"} {
		t.Run("Err401/"+method, func(t *testing.T) {
			params := map[string]any{}
			if method == "tools/call" {
				params = map[string]any{"name": "memory_status", "arguments": map[string]any{}}
			}
			if method == "initialize" {
				params = map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}
			}
			r := mcpRequest(t, method, params)
			r.Header.Set("Authorization", "Bearer wrong")
			rec := httptest.NewRecorder()
			m.ServeHTTP(rec, r)
			if rec.Code != http.StatusUnauthorized {
				t.Fatalf("status %d %s, want 401", rec.Code, rec.Body)
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != `Bearer realm="hearth"` {
				t.Errorf("WWW-Authenticate = %q, want a bare bearer challenge", got)
			}
			var body hearthv1.ErrorResponse
			if err := protojson.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.GetError().GetCode() != "UNAUTHENTICATED" {
				t.Errorf("body %s (%v)", rec.Body, err)
			}
		})
	}
	for _, c := range backend.Calls() {
		if got := c.Metadata.Get("authorization"); !slices.Equal(got, []string{"Bearer wrong"}) {
			t.Errorf("identity check carried authorization %q", got)
		}
		if got := c.Metadata.Get("x-forwarded-for"); !slices.Equal(got, []string{"192.0.2.1"}) {
			t.Errorf("identity check carried x-forwarded-for %q", got)
		}
	}

	t.Run("OKToolCallIsItsOwnCheck", func(t *testing.T) {
		var ok error
		verdict.Store(&ok)
		before := len(backend.Calls())
		r := mcpRequest(t, "tools/call", map[string]any{"name": "memory_status", "arguments": map[string]any{}})
		if _, resp := do(t, m, r); resp.Error != nil {
			t.Fatalf("tools/call for a known caller: %+v", resp)
		}
		var methods []string
		for _, c := range backend.Calls()[before:] {
			methods = append(methods, c.Method)
		}
		if len(methods) != 1 || methods[0] == whoami {
			t.Errorf("a successful tool call made the calls %v, want its own RPC alone", methods)
		}
	})

	t.Run("OKKnownWithoutScope", func(t *testing.T) {
		denied := status.Error(codes.PermissionDenied, "permission denied: client x lacks scope read")
		verdict.Store(&denied)
		_, resp := do(t, m, mcpRequest(t, "tools/list", map[string]any{}))
		if resp.Error != nil || len(resp.Result) == 0 {
			t.Errorf("tools/list for a known caller: %+v", resp)
		}
	})
}

// TestNew_ToolsListByScopes: tools/list shows the tools whose declared
// scope memory_whoami reports for the caller, and asks nothing else; a
// tool left out is still called through (the interceptor decides).
func TestNew_ToolsListByScopes(t *testing.T) {
	routes := mustRoutes(t)
	for _, held := range [][]string{{"read"}, {"read", "write"}, allScopes, nil} {
		t.Run(strings.Join(held, "+"), func(t *testing.T) {
			t.Parallel()
			backend := gatewaytest.New(t, func(method string, _ proto.Message) (proto.Message, error) {
				if method == whoami {
					return &hearthv1.WhoamiResponse{Scopes: held}, nil
				}
				return nil, nil
			})
			m, err := mcpbridge.New(backend.Conn, testVersion)
			if err != nil {
				t.Fatal(err)
			}
			_, resp := do(t, m, mcpRequest(t, "tools/list", map[string]any{}))
			var list struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			}
			if err := json.Unmarshal(resp.Result, &list); err != nil {
				t.Fatal(err)
			}
			var got, want []string
			for _, tl := range list.Tools {
				got = append(got, tl.Name)
			}
			for _, r := range routes {
				name := strings.ToLower(strings.TrimPrefix(r.Scope().String(), "SCOPE_"))
				if slices.Contains(held, name) {
					want = append(want, r.Tool.GetName())
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("scopes %v list %v, want %v", held, got, want)
			}
			if n := len(backend.Calls()); n != 1 {
				t.Errorf("tools/list made %d calls, want memory_whoami alone", n)
			}
			if held == nil {
				return
			}
			// A tool the list leaves out is not refused by the bridge.
			for _, r := range routes {
				if !slices.Contains(got, r.Tool.GetName()) {
					if res, _ := callTool(t, m, r.Tool.GetName(), json.RawMessage(`{}`), nil); res.IsError {
						t.Errorf("unlisted %s refused by the bridge: %s", r.Tool.GetName(), res.Content[0].Text)
					}
					break
				}
			}
		})
	}
}
