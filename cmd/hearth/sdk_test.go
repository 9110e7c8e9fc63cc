package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/gateway"
	"github.com/hearth-memory/hearth/server/version"
)

// TestMCP_OfficialSDK runs the official MCP TypeScript SDK client against a
// real daemon (R-T1, R-T11). `make test` installs the SDK and sets
// HEARTH_MCP_SDK; a plain `go test` skips it.
func TestMCP_OfficialSDK(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("HEARTH_MCP_SDK")
	if dir == "" {
		t.Skip("HEARTH_MCP_SDK not set (make test installs the SDK)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("HEARTH_MCP_SDK is set but node is missing: %v", err)
	}
	script, err := os.ReadFile("testdata/mcp-client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	// ESM resolves packages from the script's folder: run it from the SDK's.
	path := filepath.Join(dir, "hearth-mcp-client.mjs")
	if err := os.WriteFile(path, script, 0o644); err != nil {
		t.Fatal(err)
	}
	td := startDaemon(t, parityOptions()) // every scope: every tool is listed
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, path, td.url+"/mcp", td.tokens["claude-code"]).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node client: %v\n%s", err, stderr)
	}
	var got struct {
		Server struct{ Name, Version string }
		Tools  []struct {
			Name        string
			Annotations map[string]any
		}
		Store, Search, Denied struct {
			IsError bool `json:"isError"`
			Content []struct{ Text string }
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client output: %v\n%s", err, out)
	}
	if got.Server.Name != "hearth" || got.Server.Version != version.Version {
		t.Errorf("server = %+v", got.Server)
	}
	routes, err := gateway.Routes()
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tools) != len(routes) {
		t.Errorf("tools = %d, want every tool (%d)", len(got.Tools), len(routes))
	}
	// The SDK hands hints through as sent: a closed-world tool says so
	// (MCP's defaults are the risky values; a hint left out is one).
	for _, tool := range got.Tools {
		if _, ok := tool.Annotations["openWorldHint"]; !ok && tool.Name != "memory_anchor_sweep" {
			t.Errorf("%s lacks openWorldHint", tool.Name)
		}
	}
	if got.Store.IsError || len(got.Store.Content) != 1 {
		t.Fatalf("store: %+v", got.Store)
	}
	var stored struct{ Record struct{ ID, Writer string } }
	json.Unmarshal([]byte(got.Store.Content[0].Text), &stored)
	if stored.Record.Writer != "claude-code" {
		t.Errorf("writer = %q", stored.Record.Writer)
	}
	if got.Search.IsError || len(got.Search.Content) != 1 {
		t.Fatalf("search: %+v", got.Search)
	}
	var found struct{ Hits []struct{ ID string } }
	json.Unmarshal([]byte(got.Search.Content[0].Text), &found)
	if len(found.Hits) == 0 || found.Hits[0].ID != stored.Record.ID {
		t.Errorf("search did not find the stored record: %s", got.Search.Content[0].Text)
	}
	if !got.Denied.IsError {
		t.Errorf("a call without ids was not an isError result: %+v", got.Denied)
	}
}
