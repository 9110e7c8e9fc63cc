package connect

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzMergeHooksFile: any settings file either is refused or merges into
// valid JSON that holds each of Hearth's hooks exactly once.
func FuzzMergeHooksFile(f *testing.F) {
	f.Add([]byte(`{"model":"opus","hooks":{"UserPromptSubmit":[{"hooks":[{"type":"command","command":"x hook prompt --harness codex"}]}]}}`))
	f.Add([]byte(`{"hooks":{"SessionStart":[{"matcher":"startup","hooks":[]}],"Stop":7}}`))
	f.Add([]byte(``))
	o := testOptions(Codex)
	ours := Hooks(o)
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := mergeHooksFile(data, ours)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("merged into invalid JSON: %s", out)
		}
		for _, e := range []string{"session-start", "prompt", "session-end"} {
			cmd, _ := marshal(HookCommand(o, e))
			if n := strings.Count(string(out), string(cmd)); n != 1 {
				t.Fatalf("%s appears %d times in %s", e, n, out)
			}
		}
	})
}

// FuzzMergeCodexMCP: any config.toml keeps its lines that are not Hearth's
// table, and gains the table exactly once.
func FuzzMergeCodexMCP(f *testing.F) {
	f.Add("model = \"x\"\n[mcp_servers.hearth]\nurl = \"a\"\n[mcp_servers.hearth.env]\nA = \"1\"\n[b]\nc = 1\n")
	f.Add("[mcp_servers.\"hearth\"]\n")
	f.Add("")
	table := CodexMCPTOML(testOptions(Codex))
	f.Fuzz(func(t *testing.T, in string) {
		out := string(mergeCodexMCP([]byte(in), table))
		if n := strings.Count(out, table); n != 1 {
			t.Fatalf("table appears %d times in %q", n, out)
		}
		if !strings.Contains(in, "[") && !strings.HasPrefix(out, in) {
			// Without tables, the input is kept whole, the table after it.
			t.Fatalf("lines lost: %q -> %q", in, out)
		}
	})
}
