package main

import (
	"context"
	"fmt"
	"testing"
)

// TestDemand_OneClientCannotGameIt holds issue 41's tenth finding through
// REST, MCP and gRPC: an address client searching in 30 invented sessions
// does not make its question the top of memory_questions over one that two
// other clients each asked once.
func TestDemand_OneClientCannotGameIt(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, testOptions())
	tok := td.tokens["claude-code"]
	const ns = "github/acme/demand"
	lan := mcpTransport{td: td, client: dialFrom(readerIP)}
	for i := range 30 {
		r := lan.call(t, "", "memory_search", map[string]any{"namespace": ns, "query": "which port does the exporter use", "session_id": fmt.Sprintf("invented-%d", i)})
		if !r.ok {
			t.Fatalf("address client search %d: %v", i, r)
		}
	}
	if r := (restTransport{td}).call(t, tok, "memory_search", map[string]any{"namespace": ns, "query": "where is the changelog", "session_id": "s1"}); !r.ok {
		t.Fatal(r)
	}
	if r := (grpcTransport{td: td}).call(t, td.tokens["codex"], "memory_search", map[string]any{"namespace": ns, "query": "where is the changelog", "session_id": "s2"}); !r.ok {
		t.Fatal(r)
	}
	if err := td.db.FlushAsks(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, tr := range transports(td) {
		r := tr.call(t, tok, "memory_questions", map[string]any{"namespace": ns, "limit": 5})
		qs := list(r.body, "questions")
		if !r.ok || len(qs) != 2 {
			t.Fatalf("%s: %v, want two questions", tr.name(), r)
		}
		if str(qs[0], "text") != "where is the changelog" || num(qs[0], "demand") != 2 || num(qs[0], "clients") != 2 {
			t.Errorf("%s: top %v, want the question two clients asked, demand 2", tr.name(), qs[0])
		}
		if num(qs[1], "sessions") != 30 || num(qs[1], "clients") != 1 || num(qs[1], "demand") >= 2 {
			t.Errorf("%s: second %v, want 30 sessions of one client, demand under 2", tr.name(), qs[1])
		}
	}
}
