package connect

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestText_Copilot holds what `hearth connect copilot` prints, with and
// without a token file: the MCP entry reads ${HEARTH_TOKEN} either way,
// and no token is in it.
func TestText_Copilot(t *testing.T) {
	t.Parallel()
	o := testOptions(Copilot)
	golden(t, "text-copilot.txt", []byte(Text(o)))
	o.TokenFile = "/home/ann/.config/hearth/copilot.token"
	text := Text(o)
	golden(t, "text-copilot-token-file.txt", []byte(text))
	if !strings.Contains(text, "--token-file /home/ann/.config/hearth/copilot.token") || strings.Contains(text, "hearth_") {
		t.Errorf("text:\n%s", text)
	}
}

// TestSettingsPaths_Copilot: $COPILOT_HOME, else ~/.copilot; the hooks in
// a file of Hearth's own in the personal hooks folder.
func TestSettingsPaths_Copilot(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	p, err := SettingsPaths(Copilot, env(map[string]string{"HOME": "/home/ann"}))
	if err != nil || p.MCP != "/home/ann/.copilot/mcp-config.json" || p.Hooks != "/home/ann/.copilot/hooks/hearth.json" {
		t.Errorf("paths = %+v, %v", p, err)
	}
	p, err = SettingsPaths(Copilot, env(map[string]string{"HOME": "/home/ann", "COPILOT_HOME": "/cfg/copilot"}))
	if err != nil || p.MCP != "/cfg/copilot/mcp-config.json" || p.Hooks != "/cfg/copilot/hooks/hearth.json" {
		t.Errorf("paths with COPILOT_HOME = %+v, %v", p, err)
	}
	if _, err := SettingsPaths(Copilot, env(nil)); err == nil {
		t.Error("no HOME and no COPILOT_HOME gave paths")
	}
	if _, err := SettingsPaths("gemini", env(map[string]string{"HOME": "/h"})); err == nil || !strings.Contains(err.Error(), "copilot") {
		t.Errorf("unknown harness: %v", err)
	}
}

// TestHooks_Copilot: Claude Code's event names, PostToolUseFailure
// included (Copilot runs PostToolUse after a success only), no matchers
// and no async flags.
func TestHooks_Copilot(t *testing.T) {
	t.Parallel()
	o := testOptions(Copilot)
	h := Hooks(o)
	if got := strings.Join(h.Keys(), ","); got != "SessionStart,UserPromptSubmit,PostToolUse,PostToolUseFailure,PreCompact,SessionEnd" {
		t.Errorf("events = %s", got)
	}
	for _, e := range h.Keys() {
		var groups []map[string]json.RawMessage
		if err := json.Unmarshal(h.Get(e), &groups); err != nil || len(groups) != 1 {
			t.Fatalf("%s: %s, %v", e, h.Get(e), err)
		}
		if _, ok := groups[0]["matcher"]; ok {
			t.Errorf("%s has a matcher", e)
		}
		if s := string(groups[0]["hooks"]); strings.Contains(s, "async") || !strings.Contains(s, "--harness copilot") {
			t.Errorf("%s hooks = %s", e, s)
		}
	}
	if cx := Hooks(testOptions(Codex)); cx.Has("PostToolUseFailure") {
		t.Error("Codex got PostToolUseFailure")
	}
}

// TestApply_Copilot merges mcpServers.hearth into an existing
// mcp-config.json (other servers kept, an older entry replaced, a backup
// of the old file), writes the hooks file new, and changes nothing the
// second time.
func TestApply_Copilot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, err := SettingsPaths(Copilot, func(k string) string { return map[string]string{"COPILOT_HOME": dir}[k] })
	if err != nil {
		t.Fatal(err)
	}
	oldMCP := `{"mcpServers": {"context7": {"type": "stdio", "command": "npx", "args": ["-y", "ctx7"], "tools": ["*"]}, "hearth": {"type": "http", "url": "http://old/mcp"}}}`
	writeFile(t, p.MCP, oldMCP, 0o600)
	o := testOptions(Copilot)
	o.TokenFile = "/home/ann/.config/hearth/copilot.token"
	now := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	changes, err := Apply(o, p, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 2 || changes[0].Path != p.MCP || changes[0].Backup == "" || changes[1].Path != p.Hooks || changes[1].Backup != "" {
		t.Fatalf("changes = %+v, want mcp-config.json backed up and the hooks file new", changes)
	}
	if got := readFile(t, changes[0].Backup); got != oldMCP {
		t.Errorf("backup = %s, want the old file", got)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Command string            `json:"command"`
			Headers map[string]string `json:"headers"`
			Tools   []string          `json:"tools"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(readFile(t, p.MCP)), &cfg); err != nil {
		t.Fatal(err)
	}
	h := cfg.MCPServers["hearth"]
	if len(cfg.MCPServers) != 2 || cfg.MCPServers["context7"].Command != "npx" || h.Type != "http" || h.URL != "http://hearth.lan:8765/mcp" ||
		h.Headers["Authorization"] != "Bearer ${HEARTH_TOKEN}" || len(h.Tools) != 1 || h.Tools[0] != "*" {
		t.Errorf("mcp-config.json = %+v", cfg)
	}
	hooks := readFile(t, p.Hooks)
	for _, e := range []string{"session-start", "prompt", "tool", "compact", "session-end"} {
		if !strings.Contains(hooks, HookCommand(o, e)) {
			t.Errorf("hooks file lacks %s:\n%s", e, hooks)
		}
	}
	for _, f := range []string{p.MCP, p.Hooks} {
		if b, _ := os.ReadFile(f); strings.Contains(string(b), "hearth_") {
			t.Errorf("%s holds something token-like", f)
		}
	}
	if fi, err := os.Stat(p.Hooks); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("hooks file: %v, %v; want mode 0600", fi, err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(p.Hooks)); len(entries) != 1 {
		t.Errorf("hooks folder holds %d files, want only %s", len(entries), CopilotHooksFile)
	}
	if again, err := Apply(o, p, now.Add(time.Minute)); err != nil || len(again) != 0 {
		t.Errorf("second Apply = %+v, %v; want no change", again, err)
	}
}
