package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScreen_CallerIdentifiers holds issue 41's first finding through
// REST, MCP and gRPC: a token given as memory_search's or memory_get's
// session_id (by a token client or an address client) is never stored, yet
// the demand signal still sees the session and its use; a token given as
// memory_session_close's op_id is refused naming op_id, as its session_id
// already was. Nothing of them reaches the data files.
func TestScreen_CallerIdentifiers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	td := openDaemon(t, &Daemon{Config: Config{DataDir: dir, Options: testOptions()}}, false)
	defer td.conn.Close()
	defer td.Close(context.Background())
	tok := td.tokens["claude-code"]
	rest := restTransport{td}
	const ns = "github/acme/sessions"
	stored := rest.call(t, tok, "memory_store", storeArgs(ns, "Deploy logs", "The deploy logs go to /var/log/deploy on the runner."))
	if !stored.ok {
		t.Fatal(stored)
	}
	id := str(stored.body, "record", "id")

	// Made-up GitHub tokens of the right shape, one per caller.
	sessions := map[string]string{
		"rest": "ghp_R8mK2xQ7vN4pL9sT3wY6zB1cF5hJ0dG8aE2u",
		"mcp":  "ghp_Q3nL8vX2mK7pR4tW9yB6zC1dF5hJ0sG8aE2k",
		"grpc": "ghp_T6pM1xR9vN3kL8sQ2wY7zB4cF5hJ0dG8aE2m",
		"lan":  "ghp_W2kN7xQ4vM9pL1sT8wY3zB6cF5hJ0dG8aE2r",
	}
	const query = "where do the deploy logs go"
	for _, tr := range transports(td) {
		s := sessions[tr.name()]
		if r := tr.call(t, tok, "memory_search", map[string]any{"namespace": ns, "query": query, "session_id": s}); !r.ok {
			t.Fatalf("%s search: %v", tr.name(), r)
		}
		if r := tr.call(t, tok, "memory_get", map[string]any{"ids": []string{id}, "session_id": s}); !r.ok {
			t.Fatalf("%s get: %v", tr.name(), r)
		}
	}
	lan := mcpTransport{td: td, client: dialFrom(readerIP)}
	if r := lan.call(t, "", "memory_search", map[string]any{"namespace": ns, "query": query, "session_id": sessions["lan"]}); !r.ok {
		t.Fatalf("address client search: %v", r)
	}
	q := questionIn(t, td, tok, ns, query)
	if num(q, "asks") != 4 || num(q, "sessions") != 4 || num(q, "clients") != 2 || num(q, "used") != 3 {
		t.Errorf("question %v: want 4 asks in 4 sessions of 2 clients, 3 used", q)
	}

	for _, tr := range transports(td) {
		s := "ghp_Z5vB8nM2xK7qL4pR9tW1yC6dF3hJ0sG8aE2" + tr.name()[:1]
		r := tr.call(t, tok, "memory_session_close", map[string]any{"session_id": "s-close", "namespace": ns, "op_id": s})
		if r.ok || r.code != "INVALID_ARGUMENT" || r.http != 400 || str(r.body, "error", "field") != "op_id" || str(r.body, "error", "pattern") == "" {
			t.Errorf("%s: close with a token as op_id: %v, want INVALID_ARGUMENT/400 naming op_id and a pattern", tr.name(), r)
		}
		if strings.Contains(string(r.raw), s) {
			t.Errorf("%s: the reply echoes the op_id", tr.name())
		}
		sessions["close-"+tr.name()] = s
	}

	closeDaemon(t, td)
	var disk []byte
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			b, _ := os.ReadFile(p)
			disk = append(disk, b...)
		}
		return nil
	})
	for name, s := range sessions {
		if bytes.Contains(disk, []byte(s)) {
			t.Errorf("%s: the identifier %.8s… is in the data files", name, s)
		}
	}
}
