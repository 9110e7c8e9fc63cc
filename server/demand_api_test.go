package server_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hearth-memory/hearth/server/servertest"
)

// TestDemand_OneClientCannotGameIt holds issue 41's tenth finding through
// REST, MCP and gRPC: an address client searching in 30 invented sessions
// does not make its question the top of memory_questions over one that two
// other clients each asked once.
func TestDemand_OneClientCannotGameIt(t *testing.T) {
	t.Parallel()
	td := servertest.Start(t, testOptions())
	tok := td.Tokens["claude-code"]
	const ns = "github/acme/demand"
	lan := servertest.MCP{URL: td.URL, Client: dialFrom(readerIP)}
	for i := range 30 {
		r := lan.Call(t, "", "memory_search", map[string]any{"namespace": ns, "query": "which port does the exporter use", "session_id": fmt.Sprintf("invented-%d", i)})
		if !r.OK {
			t.Fatalf("address client search %d: %v", i, r)
		}
	}
	if r := td.REST.Call(t, tok, "memory_search", map[string]any{"namespace": ns, "query": "where is the changelog", "session_id": "s1"}); !r.OK {
		t.Fatal(r)
	}
	if r := td.GRPC.Call(t, td.Tokens["codex"], "memory_search", map[string]any{"namespace": ns, "query": "where is the changelog", "session_id": "s2"}); !r.OK {
		t.Fatal(r)
	}
	if err := td.DB.FlushAsks(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, tr := range td.Transports() {
		r := tr.Call(t, tok, "memory_questions", map[string]any{"namespace": ns, "limit": 5})
		qs := list(r.Body, "questions")
		if !r.OK || len(qs) != 2 {
			t.Fatalf("%s: %v, want two questions", tr.Name(), r)
		}
		if str(qs[0], "text") != "where is the changelog" || num(qs[0], "demand") != 2 || num(qs[0], "clients") != 2 {
			t.Errorf("%s: top %v, want the question two clients asked, demand 2", tr.Name(), qs[0])
		}
		if num(qs[1], "sessions") != 30 || num(qs[1], "clients") != 1 || num(qs[1], "demand") >= 2 {
			t.Errorf("%s: second %v, want 30 sessions of one client, demand under 2", tr.Name(), qs[1])
		}
	}
}
