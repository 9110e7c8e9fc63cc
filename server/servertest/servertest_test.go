package servertest_test

import (
	"encoding/json"
	"testing"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/server/servertest"
	"github.com/mark3labs/mcp-go/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestHarness_ThreeClients runs one scenario over the harness's three
// clients: a record stored with the generated gRPC client is read back
// over REST and found with mcp-go's client; a token with read scope alone
// is refused the write with the same error on every transport, and
// nothing is written.
func TestHarness_ThreeClients(t *testing.T) {
	t.Parallel()
	s := servertest.Start(t, servertest.WithClient(options.Default(), "reader", options.ScopeRead))
	tok, reader := s.Tokens["claude-code"], s.Tokens["reader"]
	if tok == "" || reader == "" {
		t.Fatalf("tokens %v: want claude-code and reader", s.Tokens)
	}
	const ns = "github/acme/harness"

	memory := hearthv1.NewMemoryServiceClient(s.Conn)
	req := &hearthv1.StoreRequest{Namespace: ns, Type: "decision", Title: "Harness record",
		Content: "The harness stores over gRPC and reads over REST and MCP."}
	st, err := memory.Store(s.Context(t, tok), req)
	if err != nil {
		t.Fatalf("grpc store: %v", err)
	}
	id := st.GetRecord().GetId()

	got := s.REST.Call(t, tok, "memory_get", map[string]any{"ids": []string{id}})
	if !got.OK || servertest.Str(got.Body, "records", 0, "title") != "Harness record" || servertest.Str(got.Body, "records", 0, "writer") != "claude-code" {
		t.Fatalf("rest get: %v", got)
	}

	mc := s.MCPClient(t, tok)
	call := mcp.CallToolRequest{}
	call.Params.Name = "memory_search"
	call.Params.Arguments = map[string]any{"namespace": ns, "query": "harness stores"}
	res, err := mc.CallTool(t.Context(), call)
	if err != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("mcp search: %v %+v", err, res)
	}
	text, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		t.Fatalf("mcp search: content %T, want text", res.Content[0])
	}
	var found map[string]any
	if err := json.Unmarshal([]byte(text.Text), &found); err != nil || servertest.Str(found, "hits", 0, "id") != id {
		t.Fatalf("mcp search: %v %s, want the record first", err, text.Text)
	}

	// The reader's write is refused alike over the three transports.
	if _, err := memory.Store(s.Context(t, reader), req); status.Code(err) != codes.PermissionDenied {
		t.Errorf("grpc store as reader: %v, want PermissionDenied", err)
	}
	var bodies [][]byte
	for _, tr := range s.Transports() {
		r := tr.Call(t, reader, "memory_store", servertest.StoreArgs(ns, "Refused", "A reader cannot write."))
		if r.OK || r.Code != "PERMISSION_DENIED" || r.HTTP != 403 {
			t.Errorf("%s: store as reader: %v, want PERMISSION_DENIED/403", tr.Name(), r)
		}
		bodies = append(bodies, r.Raw)
	}
	for i := 1; i < len(bodies); i++ {
		if string(bodies[i]) != string(bodies[0]) {
			t.Errorf("error bodies differ:\n%s\n%s", bodies[0], bodies[i])
		}
	}
	tl := s.GRPC.Call(t, tok, "memory_timeline", map[string]any{"namespace": ns, "within": "namespace"})
	if n := len(servertest.List(tl.Body, "records")); !tl.OK || n != 1 {
		t.Errorf("timeline: %v: want the one record stored", tl)
	}
}
