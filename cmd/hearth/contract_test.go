package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/auth"
	"github.com/hearth-memory/hearth/server/version"
)

// rpcDecl is one RPC as the generated descriptors declare it.
type rpcDecl struct {
	method string // /hearth.v1.MemoryService/Store
	tool   *hearthv1.Tool
	md     protoreflect.MethodDescriptor
}

// declaredRPCs walks every registered file under hearth/ on its own — not
// through gateway.Routes, whose walk it checks — and returns every RPC of
// every service in them.
func declaredRPCs(t *testing.T) []rpcDecl {
	t.Helper()
	var out []rpcDecl
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if !strings.HasPrefix(fd.Path(), "hearth/") {
			return true
		}
		for i := range fd.Services().Len() {
			sd := fd.Services().Get(i)
			for j := range sd.Methods().Len() {
				md := sd.Methods().Get(j)
				tool, _ := proto.GetExtension(md.Options(), hearthv1.E_Tool).(*hearthv1.Tool)
				out = append(out, rpcDecl{method: "/" + string(sd.FullName()) + "/" + string(md.Name()), tool: tool, md: md})
			}
		}
		return true
	})
	if len(out) < 10 {
		t.Fatalf("found %d RPCs under hearth/: the descriptors are not registered", len(out))
	}
	return out
}

// scopeOf is what the interceptor must demand for each declared scope.
var scopeOf = map[hearthv1.Scope]auth.Scope{
	hearthv1.Scope_SCOPE_READ:   auth.Read,
	hearthv1.Scope_SCOPE_WRITE:  auth.Write,
	hearthv1.Scope_SCOPE_DELETE: auth.Delete,
	hearthv1.Scope_SCOPE_EXPORT: auth.Export,
	hearthv1.Scope_SCOPE_ADMIN:  auth.Admin,
}

// TestContract_EveryRPC holds every RPC the generated code declares to the
// promise that adding an RPC is the proto and its handler, nothing else
// (like temporal's metadata_test): each declares a tool with a name and a
// scope and does not stream; the running daemon registers it on the gRPC
// server, its interceptor demands exactly that scope, POST /api/<tool>
// reaches the interceptor (401 without a token, never 404), and MCP lists
// the tool with the option's hints. Conversely every method the
// gRPC server serves is declared or public.
func TestContract_EveryRPC(t *testing.T) {
	t.Parallel()
	rpcs := declaredRPCs(t)
	for _, r := range rpcs {
		switch {
		case r.tool == nil || r.tool.GetName() == "":
			t.Errorf("%s: no hearth.v1.tool option with a name", r.method)
		case r.tool.GetScope() == hearthv1.Scope_SCOPE_UNSPECIFIED:
			t.Errorf("%s: declares no scope: it would be denied to everyone", r.method)
		case scopeOf[r.tool.GetScope()] == "":
			t.Errorf("%s: scope %v is not one of read, write, delete, export, admin", r.method, r.tool.GetScope())
		case r.md.IsStreamingClient() || r.md.IsStreamingServer():
			t.Errorf("%s: streams; REST and MCP cannot carry it", r.method)
		case r.tool.GetTitle() == "":
			t.Errorf("%s: tool %s has no title", r.method, r.tool.GetName())
		}
	}
	if t.Failed() {
		t.FailNow() // the daemon refuses to start on such descriptors
	}

	// Every scope: MCP lists the tools a client's scopes can call.
	td := startDaemon(t, parityOptions())
	table, err := methodTable()
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for service, info := range td.grpc.GetServiceInfo() {
		for _, m := range info.Methods {
			served["/"+service+"/"+m.Name] = true
		}
	}
	tools := mcpTools(t, td)
	rest := restTransport{td}
	paths := openAPIPaths(t, td)

	declared := map[string]bool{}
	for _, r := range rpcs {
		declared[r.method] = true
		name := r.tool.GetName()
		t.Run(name, func(t *testing.T) {
			if !served[r.method] {
				t.Errorf("%s is not registered on the gRPC server", r.method)
			}
			if got, want := table[r.method], scopeOf[r.tool.GetScope()]; got != want {
				t.Errorf("interceptor demands %q for %s, want %q", got, r.method, want)
			}
			if res := rest.call(t, "", name, map[string]any{}); res.http != http.StatusUnauthorized || res.code != "UNAUTHENTICATED" {
				t.Errorf("POST /api/%s without a token = %d %s, want 401 UNAUTHENTICATED from the interceptor", name, res.http, res.code)
			}
			if post, ok := paths["/api/"+name]["post"]; !ok || post == nil {
				t.Errorf("the OpenAPI document has no POST /api/%s", name)
			}
			tool, ok := tools[name]
			if !ok {
				t.Fatalf("MCP tools/list has no %s", name)
			}
			// No title is sent; destructive and idempotent mean nothing for
			// a read-only tool (MCP).
			a := tool.Annotations
			if tool.Title != "" || a.ReadOnly != r.tool.GetReadOnly() || a.OpenWorld != r.tool.GetOpenWorld() ||
				!a.ReadOnly && (a.Destructive != r.tool.GetDestructive() || a.Idempotent != r.tool.GetIdempotent()) {
				t.Errorf("MCP tool %s = %+v, want the option %v", name, tool, r.tool)
			}
		})
	}
	for m := range served {
		if !declared[m] && table[m] != auth.Public {
			t.Errorf("the gRPC server serves %s, which is neither declared under hearth/ nor public", m)
		}
	}
	if len(tools) != len(rpcs) {
		t.Errorf("MCP lists %d tools for %d RPCs", len(tools), len(rpcs))
	}
}

// openAPIPaths fetches GET /api/openapi.json, unauthenticated, and returns
// its paths; it also holds the document's version to the build's.
func openAPIPaths(t *testing.T, td *testDaemon) map[string]map[string]any {
	t.Helper()
	resp, err := http.Get(td.url + "/api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Swagger string                    `json:"swagger"`
		Info    struct{ Version string }  `json:"info"`
		Paths   map[string]map[string]any `json:"paths"`
		Defs    map[string]map[string]any `json:"definitions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/openapi.json: %d, %v", resp.StatusCode, err)
	}
	if doc.Swagger != "2.0" || doc.Info.Version != version.Version {
		t.Errorf("openapi: swagger %q version %q, want 2.0 and %s", doc.Swagger, doc.Info.Version, version.Version)
	}
	if _, ok := doc.Defs["v1ErrorResponse"]; !ok {
		t.Error("openapi: no ErrorResponse definition")
	}
	return doc.Paths
}

// mcpTool is a tool as a client reads tools/list: a hint not sent is
// MCP's default.
type mcpTool struct {
	Title       string `json:"title"`
	Annotations struct {
		ReadOnly    bool `json:"readOnlyHint"`
		Destructive bool `json:"destructiveHint"`
		Idempotent  bool `json:"idempotentHint"`
		OpenWorld   bool `json:"openWorldHint"`
	} `json:"annotations"`
}

// mcpTools lists the daemon's MCP tools by name.
func mcpTools(t *testing.T, td *testDaemon) map[string]mcpTool {
	t.Helper()
	code, raw := mcpTransport{td: td}.rpc(t, td.tokens["claude-code"], "tools/list", map[string]any{})
	if code != http.StatusOK {
		t.Fatalf("tools/list: HTTP %d %s", code, raw)
	}
	var env struct {
		Result struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	out := map[string]mcpTool{}
	for _, b := range env.Result.Tools {
		var tl struct {
			Name string `json:"name"`
			mcpTool
		}
		tl.Annotations.Destructive, tl.Annotations.OpenWorld = true, true // MCP's defaults
		if err := json.Unmarshal(b, &tl); err != nil {
			t.Fatal(err)
		}
		out[tl.Name] = tl.mcpTool
	}
	return out
}
