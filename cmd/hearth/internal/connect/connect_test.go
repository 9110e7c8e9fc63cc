package connect

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/version"
)

var update = flag.Bool("update", false, "rewrite golden files and the repository's plugin files")

// repoRoot is the repository root, four levels up from this package.
const repoRoot = "../../../.."

// TestPluginFiles_UpToDate: the plugin and marketplace files in the
// repository are exactly what PluginFiles makes (go test -update rewrites
// them), so the plugins and `hearth connect` never drift apart.
func TestPluginFiles_UpToDate(t *testing.T) {
	t.Parallel()
	for p, want := range PluginFiles(version.Version) {
		full := filepath.Join(repoRoot, filepath.FromSlash(p))
		if *update {
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(full)
		if err != nil {
			t.Errorf("%s: %v (run go test ./cmd/hearth/internal/connect -update)", p, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: got\n%s\nwant\n%s\n(run go test ./cmd/hearth/internal/connect -update)", p, got, want)
		}
	}
}

// golden compares got with testdata/name (rewritten with -update).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: got\n%s\nwant\n%s", name, got, want)
	}
}

func testOptions(h string) Options {
	return Options{Harness: h, URL: "http://hearth.lan:8765", Exe: "/opt/hearth tools/hearth", PassURL: true}
}

// TestText_OK holds what `hearth connect` prints for each harness, with and
// without a token file.
func TestText_OK(t *testing.T) {
	t.Parallel()
	for _, h := range []string{ClaudeCode, Codex} {
		o := testOptions(h)
		golden(t, "text-"+h+".txt", []byte(Text(o)))
		o.TokenFile = "/home/ann/.config/hearth/token"
		golden(t, "text-"+h+"-token-file.txt", []byte(Text(o)))
		if strings.Contains(Text(o), "hearth_") {
			t.Errorf("%s: text holds something token-like", h)
		}
	}
}

// TestHookCommand_OK: paths with spaces and quotes reach the shell whole.
func TestHookCommand_OK(t *testing.T) {
	t.Parallel()
	o := Options{Harness: Codex, Exe: "/it's here/hearth", URL: "http://h:1", PassURL: true, TokenFile: "/t f"}
	got := HookCommand(o, "prompt")
	want := `'/it'\''s here/hearth' hook prompt --harness codex --url http://h:1 --token-file '/t f'`
	if got != want {
		t.Errorf("HookCommand = %s, want %s", got, want)
	}
	if !ownHook(got) {
		t.Errorf("ownHook(%q) = false, want true", got)
	}
	if ownHook("/usr/bin/other-tool prompt") {
		t.Error("ownHook claims another tool's hook")
	}
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestApply_ClaudeCode merges into existing settings: other keys, servers
// and hooks stay (in order), an older Hearth hook is replaced, backups hold
// the old files, and a second apply changes nothing.
func TestApply_ClaudeCode(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		dir := t.TempDir()
		p := Paths{MCP: filepath.Join(dir, ".claude.json"), Hooks: filepath.Join(dir, ".claude", "settings.json")}
		oldMCP := `{"numStartups": 3, "mcpServers": {"github": {"type": "http", "url": "https://example.com/mcp"}, "hearth": {"type": "http", "url": "http://old/mcp"}}, "theme": "dark"}`
		oldHooks := `{"model": "opus", "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "/usr/bin/lint-prompt"}, {"type": "command", "command": "/old/hearth hook prompt --harness claude-code"}]}], "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}]}}`
		writeFile(t, p.MCP, oldMCP, 0o600)
		writeFile(t, p.Hooks, oldHooks, 0o644)
		now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		o := testOptions(ClaudeCode)
		changes, err := Apply(o, p, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(changes) != 2 || changes[0].Backup == "" || changes[1].Backup == "" {
			t.Fatalf("changes = %+v, want both files with backups", changes)
		}
		if got := readFile(t, changes[0].Backup); got != oldMCP {
			t.Errorf("backup of .claude.json = %s, want the old file", got)
		}
		if got := readFile(t, changes[1].Backup); got != oldHooks {
			t.Errorf("backup of settings.json = %s, want the old file", got)
		}
		root, err := ParseObject([]byte(readFile(t, p.MCP)))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(root.Keys(), ","); got != "numStartups,mcpServers,theme" {
			t.Errorf(".claude.json keys = %s, want numStartups,mcpServers,theme", got)
		}
		servers, _ := ParseObject(root.Get("mcpServers"))
		if got := strings.Join(servers.Keys(), ","); got != "github,hearth" {
			t.Errorf("mcpServers = %s, want github,hearth", got)
		}
		var compact bytes.Buffer
		json.Compact(&compact, servers.Get("hearth"))
		if got, want := compact.String(), string(ClaudeMCPServer(o).Compact()); got != want {
			t.Errorf("mcpServers.hearth = %s, want %s", got, want)
		}
		if fi, _ := os.Stat(p.Hooks); fi.Mode().Perm() != 0o644 {
			t.Errorf("settings.json mode = %v, want 0644 kept", fi.Mode().Perm())
		}
		var settings struct {
			Model string                       `json:"model"`
			Hooks map[string][]json.RawMessage `json:"hooks"`
		}
		if err := json.Unmarshal([]byte(readFile(t, p.Hooks)), &settings); err != nil {
			t.Fatal(err)
		}
		if settings.Model != "opus" || len(settings.Hooks["PreToolUse"]) != 1 {
			t.Errorf("other settings lost: %+v", settings)
		}
		prompt := string(mustJSON(settings.Hooks["UserPromptSubmit"]))
		if !strings.Contains(prompt, "/usr/bin/lint-prompt") || strings.Contains(prompt, "/old/hearth") ||
			strings.Count(prompt, " hook prompt --harness claude-code") != 1 {
			t.Errorf("UserPromptSubmit = %s, want the other hook kept and one Hearth hook", prompt)
		}
		for _, e := range []string{"SessionStart", "UserPromptSubmit", "SessionEnd"} {
			if !strings.Contains(string(mustJSON(settings.Hooks[e])), HookCommand(o, hookEventOf(e))) {
				t.Errorf("%s lacks %s", e, HookCommand(o, hookEventOf(e)))
			}
		}

		again, err := Apply(o, p, now.Add(time.Hour))
		if err != nil || len(again) != 0 {
			t.Errorf("second Apply = %+v, %v; want no change", again, err)
		}
	})
	t.Run("OKNewFiles", func(t *testing.T) {
		dir := t.TempDir()
		p := Paths{MCP: filepath.Join(dir, ".claude.json"), Hooks: filepath.Join(dir, ".claude", "settings.json")}
		changes, err := Apply(testOptions(ClaudeCode), p, time.Now())
		if err != nil || len(changes) != 2 || changes[0].Backup != "" {
			t.Fatalf("Apply = %+v, %v; want two new files", changes, err)
		}
		for _, f := range []string{p.MCP, p.Hooks} {
			if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: %v %v, want mode 0600", f, fi, err)
			}
		}
	})
	t.Run("ErrNotJSON", func(t *testing.T) {
		dir := t.TempDir()
		p := Paths{MCP: filepath.Join(dir, ".claude.json"), Hooks: filepath.Join(dir, "settings.json")}
		writeFile(t, p.MCP, "{not json", 0o600)
		if _, err := Apply(testOptions(ClaudeCode), p, time.Now()); err == nil {
			t.Fatal("Apply over a broken .claude.json succeeded")
		}
		if got := readFile(t, p.MCP); got != "{not json" {
			t.Errorf(".claude.json = %q, want it untouched", got)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("dir holds %d entries, want only the untouched file", len(entries))
		}
	})
}

func hookEventOf(name string) string {
	for _, e := range hookEvents {
		if e.Name == name {
			return e.Event
		}
	}
	return ""
}

// TestApply_Codex replaces an older [mcp_servers.hearth] table (and its
// sub-tables) in config.toml, keeps everything else, and merges hooks.json.
func TestApply_Codex(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		dir := t.TempDir()
		p := Paths{MCP: filepath.Join(dir, "config.toml"), Hooks: filepath.Join(dir, "hooks.json")}
		oldTOML := "model = \"gpt-5\"\n\n[mcp_servers.hearth]\nurl = \"http://old/mcp\"\n\n[mcp_servers.hearth.env]\nX = \"1\"\n\n[mcp_servers.other]\ncommand = \"other\"\n"
		writeFile(t, p.MCP, oldTOML, 0o600)
		o := testOptions(Codex)
		if _, err := Apply(o, p, time.Now()); err != nil {
			t.Fatal(err)
		}
		want := "model = \"gpt-5\"\n\n" + CodexMCPTOML(o) + "[mcp_servers.other]\ncommand = \"other\"\n"
		if got := readFile(t, p.MCP); got != want {
			t.Errorf("config.toml = %q, want %q", got, want)
		}
		hooks := readFile(t, p.Hooks)
		for _, e := range []string{"session-start", "prompt", "session-end"} {
			if strings.Count(hooks, HookCommand(o, e)) != 1 {
				t.Errorf("hooks.json lacks %s once:\n%s", e, hooks)
			}
		}
	})
	t.Run("OKAppend", func(t *testing.T) {
		dir := t.TempDir()
		p := Paths{MCP: filepath.Join(dir, "config.toml"), Hooks: filepath.Join(dir, "hooks.json")}
		writeFile(t, p.MCP, "model = \"gpt-5\"\n[profiles.x]\nmodel = \"o3\"", 0o600)
		o := testOptions(Codex)
		if _, err := Apply(o, p, time.Now()); err != nil {
			t.Fatal(err)
		}
		want := "model = \"gpt-5\"\n[profiles.x]\nmodel = \"o3\"\n\n" + CodexMCPTOML(o)
		if got := readFile(t, p.MCP); got != want {
			t.Errorf("config.toml = %q, want %q", got, want)
		}
	})
}

// TestParseObject_Err refuses what is not one JSON object.
func TestParseObject_Err(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"[]", `{"a":1} x`, `{"a":}`, `"s"`, "{"} {
		if _, err := ParseObject([]byte(in)); err == nil {
			t.Errorf("ParseObject(%q) succeeded", in)
		}
	}
	o, err := ParseObject([]byte(`{"b":1,"a":{"x":[1,2]},"b":2}`))
	if err != nil || string(o.Compact()) != `{"b":2,"a":{"x":[1,2]}}` {
		t.Errorf("ParseObject = %s, %v", o.Compact(), err)
	}
}

// TestApply_BackupsNeverOverwritten: --apply run again within the same
// second (with a changed URL, so the files change again) backs each file
// up under a new name: the original settings are still in the first
// backup, and every backup holds what its run replaced (issue 42).
func TestApply_BackupsNeverOverwritten(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := Paths{MCP: filepath.Join(dir, ".claude.json"), Hooks: filepath.Join(dir, ".claude", "settings.json")}
	original := `{"theme": "dark"}`
	writeFile(t, p.MCP, original, 0o600)
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var before []string
	backups := map[string]bool{}
	for i, url := range []string{"http://a:8765", "http://b:8765", "http://c:8765"} {
		o := testOptions(ClaudeCode)
		o.URL = url
		before = append(before, readFile(t, p.MCP))
		changes, err := Apply(o, p, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(changes) == 0 || changes[0].Path != p.MCP || changes[0].Backup == "" {
			t.Fatalf("run %d: changes = %+v, want .claude.json backed up", i, changes)
		}
		b := changes[0].Backup
		if backups[b] {
			t.Fatalf("run %d: backup %s reused", i, b)
		}
		backups[b] = true
		if got := readFile(t, b); got != before[i] {
			t.Errorf("run %d: backup %s = %s, want %s", i, b, got, before[i])
		}
	}
	if got := readFile(t, p.MCP+".hearth-backup-20261201T100000Z"); got != original {
		t.Errorf("the first backup = %s, want the original %s", got, original)
	}
}

// TestCheckHarness: every harness connect knows is taken, and another is
// refused with the message naming them all, as `hearth connect` prints it.
func TestCheckHarness(t *testing.T) {
	t.Parallel()
	for _, h := range Harnesses {
		if err := CheckHarness(h); err != nil {
			t.Errorf("CheckHarness(%q) = %v", h, err)
		}
	}
	want := `harness "aider": want claude-code, codex, copilot, opencode or gemini-cli`
	if err := CheckHarness("aider"); err == nil || err.Error() != want {
		t.Errorf("CheckHarness(aider) = %v, want %s", err, want)
	}
	if _, err := SettingsPaths("aider", func(string) string { return "" }); err == nil || err.Error() != want {
		t.Errorf("paths for aider: %v, want %s", err, want)
	}
}
