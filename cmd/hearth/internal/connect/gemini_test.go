package connect

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestText_GeminiCLI holds what `hearth connect gemini-cli` prints, with
// and without a token file.
func TestText_GeminiCLI(t *testing.T) {
	t.Parallel()
	o := testOptions(GeminiCLI)
	golden(t, "text-gemini-cli.txt", []byte(Text(o)))
	o.TokenFile = "/home/ann/.config/hearth/token"
	golden(t, "text-gemini-cli-token-file.txt", []byte(Text(o)))
}

// TestSettingsPaths_GeminiCLI: one settings.json under GEMINI_CLI_HOME,
// else HOME.
func TestSettingsPaths_GeminiCLI(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	p, err := SettingsPaths(GeminiCLI, env(map[string]string{"HOME": "/home/ann"}))
	if err != nil || p.MCP != "/home/ann/.gemini/settings.json" || p.Hooks != p.MCP {
		t.Errorf("HOME: %+v, %v", p, err)
	}
	p, err = SettingsPaths(GeminiCLI, env(map[string]string{"HOME": "/home/ann", "GEMINI_CLI_HOME": "/srv/g"}))
	if err != nil || p.MCP != "/srv/g/.gemini/settings.json" {
		t.Errorf("GEMINI_CLI_HOME: %+v, %v", p, err)
	}
	if _, err := SettingsPaths(GeminiCLI, env(nil)); err == nil {
		t.Error("no HOME: no error")
	}
}

// TestApply_GeminiCLI merges the MCP entry and the hooks into one
// settings.json with one backup: other settings, servers and hooks stay,
// an older Hearth hook is replaced, the token is never in the file, and a
// second apply changes nothing.
func TestApply_GeminiCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := filepath.Join(dir, ".gemini", "settings.json")
	p := Paths{MCP: f, Hooks: f}
	old := `{"general": {"enableAutoUpdate": false}, "mcpServers": {"github": {"httpUrl": "https://example.com/mcp"}, "hearth": {"httpUrl": "http://old/mcp"}}, "hooks": {"BeforeAgent": [{"hooks": [{"type": "command", "command": "/usr/bin/lint-prompt"}, {"type": "command", "command": "/old/hearth hook prompt --harness gemini-cli"}]}], "BeforeTool": [{"matcher": "run_shell_command", "hooks": [{"type": "command", "command": "guard"}]}]}}`
	writeFile(t, f, old, 0o640)
	o := testOptions(GeminiCLI)
	o.TokenFile = "/home/ann/.config/hearth/token"
	now := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	changes, err := Apply(o, p, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].Path != f || readFile(t, changes[0].Backup) != old {
		t.Fatalf("changes = %+v: want one, backing up the old file", changes)
	}
	got := readFile(t, f)
	var s struct {
		General    map[string]any `json:"general"`
		MCPServers map[string]struct {
			HTTPURL string            `json:"httpUrl"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Command string `json:"command"`
				Timeout int    `json:"timeout"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(got), &s); err != nil {
		t.Fatal(err)
	}
	if s.General["enableAutoUpdate"] != false || s.MCPServers["github"].HTTPURL != "https://example.com/mcp" {
		t.Errorf("other settings lost:\n%s", got)
	}
	if h := s.MCPServers["hearth"]; h.HTTPURL != "http://hearth.lan:8765/mcp" || h.Headers["Authorization"] != "Bearer ${HEARTH_TOKEN}" {
		t.Errorf("mcpServers.hearth = %+v", h)
	}
	if len(s.Hooks["BeforeTool"]) != 1 || len(s.Hooks["BeforeAgent"]) != 2 || s.Hooks["BeforeAgent"][0].Hooks[0].Command != "/usr/bin/lint-prompt" ||
		len(s.Hooks["BeforeAgent"][0].Hooks) != 1 {
		t.Errorf("other hooks lost or the old Hearth hook kept:\n%s", got)
	}
	for event, want := range map[string]struct {
		cmd     string
		timeout int
	}{
		"SessionStart": {"session-start", 10000}, "BeforeAgent": {"prompt", 2000}, "AfterTool": {"tool", 2000},
		"PreCompress": {"compact", 2000}, "SessionEnd": {"session-end", 2000},
	} {
		groups := s.Hooks[event]
		last := groups[len(groups)-1].Hooks[0]
		if last.Command != HookCommand(o, want.cmd) || last.Timeout != want.timeout {
			t.Errorf("%s: %+v, want %s in %d ms", event, last, HookCommand(o, want.cmd), want.timeout)
		}
	}
	if s.Hooks["AfterTool"][0].Matcher != geminiCaptureMatcher {
		t.Errorf("AfterTool matcher = %q", s.Hooks["AfterTool"][0].Matcher)
	}
	if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode changed: %v %v", fi.Mode(), err)
	}
	if again, err := Apply(o, p, now); err != nil || len(again) != 0 {
		t.Errorf("second apply: %+v, %v; want no change", again, err)
	}
	if strings.Contains(got, "hearth_") {
		t.Error("settings hold something token-like")
	}
}

// TestApply_GeminiCLIComments: a settings.json Hearth cannot read as JSON
// (Gemini CLI allows comments) is left alone and reported.
func TestApply_GeminiCLIComments(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "settings.json")
	old := "{\n  // mine\n  \"general\": {}\n}\n"
	writeFile(t, f, old, 0o600)
	if _, err := Apply(testOptions(GeminiCLI), Paths{MCP: f, Hooks: f}, time.Now()); err == nil || !strings.Contains(err.Error(), "left unchanged") {
		t.Errorf("Apply = %v, want a refusal", err)
	}
	if readFile(t, f) != old {
		t.Error("the file changed")
	}
}
