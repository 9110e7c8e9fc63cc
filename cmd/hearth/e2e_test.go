package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/server/options"
	"google.golang.org/grpc/metadata"
)

func storeArgs(ns, title, content string) map[string]any {
	return map[string]any{"namespace": ns, "type": "decision", "title": title, "content": content}
}

// TestDaemon_Lifecycle runs store → search → get → update (right and stale
// revision) → supersede → forget → timeline through each transport against
// one real daemon (R-R1..R-R5, R-K1, R-T1..R-T3).
func TestDaemon_Lifecycle(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, testOptions())
	tok := td.tokens["claude-code"]
	for _, tr := range transports(td) {
		t.Run(tr.name(), func(t *testing.T) {
			ns := "github/acme/" + tr.name()
			call := func(tool string, args any) result {
				t.Helper()
				return tr.call(t, tok, tool, args)
			}
			// Store, with an agent field that must not become the writer.
			args := storeArgs(ns, "Retry policy for the billing client", "Retry idempotent billing calls three times with exponential backoff starting at 200ms.")
			args["agent"] = "mallory"
			args["topics"] = []string{"billing"}
			args["anchors"] = []string{"path:internal/billing/client.go"}
			st := call("memory_store", args)
			if !st.ok {
				t.Fatalf("store: %v", st)
			}
			id := str(st.body, "record", "id")
			if got, want := str(st.body, "record", "writer"), "claude-code"; got != want {
				t.Errorf("writer = %q, want %q", got, want)
			}
			if got := num(st.body, "record", "revision"); got != 1 {
				t.Errorf("revision = %v, want 1", got)
			}
			if got := str(st.body, "record", "status"); got != "active" {
				t.Errorf("status = %q, want active", got)
			}
			if got := str(st.body, "record", "anchors", 0, "state"); got != "unknown" {
				t.Errorf("anchor state = %q, want unknown", got)
			}
			other := call("memory_store", storeArgs(ns, "Logging format", "Use structured JSON logs with request ids."))
			if !other.ok {
				t.Fatalf("store other: %v", other)
			}

			// Search with a natural-language question that shares only some words.
			se := call("memory_search", map[string]any{"namespace": ns, "query": "how do we retry failed billing requests?"})
			if !se.ok {
				t.Fatalf("search: %v", se)
			}
			if got := str(se.body, "hits", 0, "id"); got != id {
				t.Errorf("first hit = %q, want %q (%s)", got, id, se.raw)
			}
			if got := str(se.body, "ranking"); got != "fts" {
				t.Errorf("ranking = %q, want fts", got)
			}
			// Every hit returned shows its snippet (the pipeline cuts them
			// after ranking, for the hits returned only).
			for i := range list(se.body, "hits") {
				if got := str(se.body, "hits", i, "snippet"); !strings.Contains(strings.ToLower(got), "retry") && !strings.Contains(strings.ToLower(got), "request") {
					t.Errorf("hit %d: snippet %q shows no word of the query", i, got)
				}
			}
			if _, has := get(se.body, "hits", 0).(map[string]any)["cosine"]; has {
				t.Errorf("FTS hit carries cosine: %s", se.raw)
			}
			if num(se.body, "estimated_tokens") == 0 {
				t.Errorf("estimated_tokens missing: %s", se.raw)
			}

			// Get.
			g := call("memory_get", map[string]any{"ids": []string{id, "01ARZ3NDEKTSV4RRFFQ69G5FAV"}})
			if !g.ok || str(g.body, "records", 0, "id") != id {
				t.Fatalf("get: %v", g)
			}
			if got := str(g.body, "missing", 0); got != "01ARZ3NDEKTSV4RRFFQ69G5FAV" {
				t.Errorf("missing = %q", got)
			}

			// Update at the right revision, then at a stale one.
			up := call("memory_update", map[string]any{"id": id, "revision": 1, "changes": map[string]any{"content": "Retry idempotent billing calls five times.", "anchors": []string{"path:internal/billing/retry.go"}}})
			if !up.ok || num(up.body, "record", "revision") != 2 {
				t.Fatalf("update: %v", up)
			}
			stale := call("memory_update", map[string]any{"id": id, "revision": 1, "changes": map[string]any{"title": "Stale"}})
			if stale.ok || stale.code != "ABORTED" || stale.http != http.StatusConflict {
				t.Fatalf("stale update: %v, want ABORTED/409", stale)
			}
			if got := num(stale.body, "error", "current_revision"); got != 2 {
				t.Errorf("current_revision = %v, want 2", got)
			}
			if got := str(stale.body, "error", "record", "content"); got != "Retry idempotent billing calls five times." {
				t.Errorf("conflict record content = %q", got)
			}

			// Supersede with a new store.
			sup := call("memory_store", map[string]any{"namespace": ns, "type": "decision", "title": "Retry policy v2", "content": "Use the shared retry helper with jitter.", "supersedes": id})
			if !sup.ok {
				t.Fatalf("supersede: %v", sup)
			}
			newID := str(sup.body, "record", "id")
			g = call("memory_get", map[string]any{"ids": []string{id}})
			if got := str(g.body, "records", 0, "status"); got != "superseded" {
				t.Errorf("old status = %q, want superseded", got)
			}
			if got := str(g.body, "records", 0, "superseded_by"); got != newID {
				t.Errorf("superseded_by = %q, want %q", got, newID)
			}
			if got := num(g.body, "records", 0, "revision"); got != 3 {
				t.Errorf("old revision = %v, want 3", got)
			}
			se = call("memory_search", map[string]any{"namespace": ns, "query": "retry billing"})
			if !se.ok || len(list(se.body, "hits")) == 0 {
				t.Fatalf("search after supersede: %v, want the replacement", se)
			}
			for _, h := range list(se.body, "hits") {
				if str(h, "id") == id {
					t.Errorf("superseded record still found: %s", se.raw)
				}
			}

			// Forget at a stale revision is refused; at the right one it works.
			f := call("memory_forget", map[string]any{"id": newID, "revision": 7, "reason": "test"})
			if f.ok || f.code != "ABORTED" {
				t.Errorf("forget stale: %v", f)
			}
			f = call("memory_forget", map[string]any{"id": newID, "revision": 1, "reason": "replaced by the platform default"})
			if !f.ok || str(f.body, "record", "status") != "deleted" {
				t.Fatalf("forget: %v", f)
			}

			// Timeline: newest first, deleted left out, superseded kept.
			tl := call("memory_timeline", map[string]any{"namespace": ns})
			if !tl.ok {
				t.Fatalf("timeline: %v", tl)
			}
			var got []string
			for _, r := range list(tl.body, "records") {
				got = append(got, str(r, "id"))
			}
			want := []string{str(other.body, "record", "id"), id}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("timeline = %v, want %v", got, want)
			}
		})
	}
}

// TestDaemon_Auth covers R-A2..R-A6 over every transport.
func TestDaemon_Auth(t *testing.T) {
	t.Parallel()
	opts := testOptions()
	opts.Clients = append(opts.Clients, optionsClient("reader", "read"))
	td := startDaemon(t, opts)
	ns := "github/acme/auth"
	for _, tr := range transports(td) {
		t.Run(tr.name(), func(t *testing.T) {
			if r := tr.call(t, "", "memory_search", map[string]any{"query": "x"}); r.code != "UNAUTHENTICATED" || r.http != 401 {
				t.Errorf("no token: %v, want UNAUTHENTICATED/401", r)
			}
			if r := tr.call(t, "hearth_wrong", "memory_search", map[string]any{"query": "x"}); r.code != "UNAUTHENTICATED" {
				t.Errorf("wrong token: %v, want UNAUTHENTICATED", r)
			}
			r := tr.call(t, td.tokens["reader"], "memory_store", storeArgs(ns, "t", "c"))
			if r.code != "PERMISSION_DENIED" || r.http != 403 {
				t.Errorf("reader store: %v, want PERMISSION_DENIED/403", r)
			}
			if r := tr.call(t, td.tokens["reader"], "memory_search", map[string]any{"query": "x", "namespace": ns}); !r.ok {
				t.Errorf("reader search: %v", r)
			}
		})
	}
}

func optionsClient(name string, scopes ...options.Scope) options.Client {
	return options.Client{Name: name, Scopes: scopes}
}

// TestDaemon_AddressClient proves an address client reads but never writes
// even when its options grant write (R-A4), and that forwarded-address
// metadata from an external gRPC peer is ignored (R-A6).
func TestDaemon_AddressClient(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, testOptions())
	ns := "github/acme/addr"
	post := func(c *http.Client, tool string, args any) (int, []byte) {
		b, _ := json.Marshal(args)
		resp, err := c.Post(td.url+"/api/"+tool, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, raw
	}
	lan := dialFrom(readerIP)
	if code, raw := post(lan, "memory_search", map[string]any{"query": "x", "namespace": ns}); code != 200 {
		t.Errorf("address client search: %d %s", code, raw)
	}
	if code, raw := post(lan, "memory_store", storeArgs(ns, "t", "c")); code != 403 {
		t.Errorf("address client store: %d %s, want 403", code, raw)
	}
	// The same address over MCP: the bridge passes the real source address.
	lanMCP := mcpTransport{td: td, client: lan}
	if r := lanMCP.call(t, "", "memory_search", map[string]any{"query": "x", "namespace": ns}); !r.ok {
		t.Errorf("address client MCP search: %v", r)
	}
	if r := lanMCP.call(t, "", "memory_store", storeArgs(ns, "t", "c")); r.code != "PERMISSION_DENIED" {
		t.Errorf("address client MCP store: %v, want PERMISSION_DENIED", r)
	}
	// A plain loopback caller without a token is nobody.
	if code, _ := post(http.DefaultClient, "memory_search", map[string]any{"query": "x"}); code != 401 {
		t.Errorf("loopback without token: %d, want 401", code)
	}
	// An external gRPC caller claiming the address client's address is not it.
	forged := grpcTransport{td: td, md: metadata.Pairs("x-forwarded-for", readerIP.String())}
	if r := forged.call(t, "", "memory_search", map[string]any{"query": "x"}); r.code != "UNAUTHENTICATED" {
		t.Errorf("forged x-forwarded-for over gRPC: %v, want UNAUTHENTICATED", r)
	}
	// A REST caller sending its own X-Forwarded-For cannot claim it either:
	// the gateway appends the real address and only the last entry counts.
	req, _ := http.NewRequest(http.MethodPost, td.url+"/api/memory_search", strings.NewReader(`{"query":"x"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", readerIP.String())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("forged X-Forwarded-For over REST: %d, want 401", resp.StatusCode)
	}
}

// TestMCP_Unauthenticated: over MCP a caller that is neither a token client
// nor an address client is refused with HTTP 401 and a bearer challenge for
// every request, initialize and tools/list included, so a client shows the
// server as not connected instead of listing tools that then fail; a token
// client and an address client connect (R-A2, R-A4).
func TestMCP_Unauthenticated(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, testOptions())
	initialize := map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "test", "version": "1"}}
	for _, token := range []string{"", "hearth_wrong"} {
		for method, params := range map[string]any{"initialize": initialize, "tools/list": map[string]any{}} {
			t.Run(fmt.Sprintf("Err401/%s/token=%q", method, token), func(t *testing.T) {
				b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
				req, _ := http.NewRequest(http.MethodPost, td.url+"/mcp", bytes.NewReader(b))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				raw, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != `Bearer realm="hearth"` {
					t.Errorf("status %d, WWW-Authenticate %q, body %s; want 401 with a bearer challenge",
						resp.StatusCode, resp.Header.Get("WWW-Authenticate"), raw)
				}
			})
		}
	}
	t.Run("OKToken", func(t *testing.T) {
		if code, raw := (mcpTransport{td: td}).rpc(t, td.tokens["codex"], "initialize", initialize); code != http.StatusOK {
			t.Errorf("initialize with a token: %d %s", code, raw)
		}
	})
	t.Run("OKAddressClient", func(t *testing.T) {
		lan := mcpTransport{td: td, client: dialFrom(readerIP)}
		if code, raw := lan.rpc(t, "", "tools/list", map[string]any{}); code != http.StatusOK {
			t.Errorf("tools/list from the address client: %d %s", code, raw)
		}
	})
}

// TestGet_Malformed: one malformed entry does not fail memory_get; it is
// reported by position (never echoed), an unknown well-formed id is listed
// in missing, and the record asked for is returned, over every transport.
func TestGet_Malformed(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, testOptions())
	tok := td.tokens["claude-code"]
	stored := restTransport{td}.call(t, tok, "memory_store", storeArgs("github/acme/get", "Kept", "A record to fetch."))
	id := str(stored.body, "record", "id")
	const unknown = "01JD3M5ZK9Q8W7E6R5T4Y3X2V1"
	for _, tr := range transports(td) {
		t.Run(tr.name(), func(t *testing.T) {
			r := tr.call(t, tok, "memory_get", map[string]any{"ids": []string{"ghp_not-an-id", unknown, id}})
			if !r.ok {
				t.Fatalf("get: %v", r)
			}
			if got := list(r.body, "malformed"); len(got) != 1 || got[0] != 0.0 {
				t.Errorf("malformed = %v, want [0]", got)
			}
			if got := list(r.body, "missing"); len(got) != 1 || got[0] != unknown {
				t.Errorf("missing = %v, want [%s]", got, unknown)
			}
			if str(r.body, "records", 0, "id") != id || strings.Contains(string(r.raw), "ghp_not-an-id") {
				t.Errorf("body %s: want the stored record and no echo of the malformed entry", r.raw)
			}
		})
	}
}
