package server_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/hearth-memory/hearth/gateway"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/server/servertest"
)

// maxReadWriteToolsList is the most bytes a read+write client's tools/list
// reply may take: every client pays for the list in context before it does
// anything (README, "What each MCP client sees").
const maxReadWriteToolsList = 12000

// TestMCP_ToolsListByScope holds tools/list to a view of the interceptor's
// decision: each client sees exactly the tools whose RPC's scope (as the
// interceptor's method table demands it) it holds, and each tool it does
// not see is refused PERMISSION_DENIED when called anyway. The read+write
// list fits maxReadWriteToolsList.
func TestMCP_ToolsListByScope(t *testing.T) {
	t.Parallel()
	opts := options.Default()
	sets := map[string][]options.Scope{
		"reader": {options.ScopeRead},
		"writer": {options.ScopeRead, options.ScopeWrite},
		// The default clients' scopes.
		"deleter": {options.ScopeRead, options.ScopeWrite, options.ScopeDelete},
		"admin":   options.Scopes(),
	}
	for _, name := range []string{"reader", "writer", "deleter", "admin"} {
		opts.Clients = append(opts.Clients, options.Client{Name: name, Scopes: sets[name]})
	}
	td := servertest.Start(t, opts)
	table := td.Methods
	routes, err := gateway.Routes()
	if err != nil {
		t.Fatal(err)
	}
	mt := td.MCP
	sizes := map[string]int{}
	for _, name := range []string{"reader", "writer", "deleter", "admin"} {
		code, raw := mt.RPC(t, td.Tokens[name], "tools/list", map[string]any{})
		if code != http.StatusOK {
			t.Fatalf("%s: tools/list: HTTP %d %s", name, code, raw)
		}
		sizes[name] = len(raw)
		var env struct {
			Result struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			} `json:"result"`
		}
		if err := json.Unmarshal(raw, &env); err != nil {
			t.Fatal(err)
		}
		var got, want []string
		for _, tl := range env.Result.Tools {
			got = append(got, tl.Name)
		}
		for _, r := range routes {
			if slices.Contains(sets[name], options.Scope(table[r.FullMethod()])) {
				want = append(want, r.Tool.GetName())
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s (%v) sees %v, want %v", name, sets[name], got, want)
		}
		for _, r := range routes {
			if slices.Contains(got, r.Tool.GetName()) {
				continue
			}
			if res := mt.Call(t, td.Tokens[name], r.Tool.GetName(), map[string]any{}); res.Code != "PERMISSION_DENIED" {
				t.Errorf("%s: unlisted %s answered %s %s, want PERMISSION_DENIED from the interceptor", name, r.Tool.GetName(), res.Code, res.Raw)
			}
		}
	}
	t.Logf("tools/list bytes: read %d, read+write %d, read+write+delete %d, every scope %d", sizes["reader"], sizes["writer"], sizes["deleter"], sizes["admin"])
	if sizes["writer"] > maxReadWriteToolsList {
		t.Errorf("a read+write client's tools/list is %d bytes, over %d", sizes["writer"], maxReadWriteToolsList)
	}
}
