package connect

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestText_OpenCode holds what `hearth connect opencode` prints, with and
// without a token file: the token is referenced, never inlined.
func TestText_OpenCode(t *testing.T) {
	t.Parallel()
	o := testOptions(OpenCode)
	golden(t, "text-opencode.txt", []byte(Text(o)))
	if !strings.Contains(Text(o), `"Bearer {env:HEARTH_TOKEN}"`) {
		t.Errorf("without a token file the header does not read $HEARTH_TOKEN:\n%s", Text(o))
	}
	o.TokenFile = "/home/ann/.config/hearth/opencode.token"
	golden(t, "text-opencode-token-file.txt", []byte(Text(o)))
	if !strings.Contains(Text(o), `"Bearer {file:/home/ann/.config/hearth/opencode.token}"`) {
		t.Errorf("with a token file the header does not read it:\n%s", Text(o))
	}
}

// TestSettingsPaths_OpenCode follows opencode's own lookup of its global
// config directory.
func TestSettingsPaths_OpenCode(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"HOME": "/home/ann"}, "/home/ann/.config/opencode"},
		{map[string]string{"HOME": "/home/ann", "XDG_CONFIG_HOME": "/x"}, "/x/opencode"},
		{map[string]string{"HOME": "/home/ann", "XDG_CONFIG_HOME": "/x", "OPENCODE_CONFIG_DIR": "/oc"}, "/oc"},
	} {
		p, err := SettingsPaths(OpenCode, func(k string) string { return c.env[k] })
		if err != nil || p.MCP != filepath.Join(c.want, "opencode.json") || p.Hooks != filepath.Join(c.want, "plugins", "hearth.js") {
			t.Errorf("%v: paths %+v (%v), want under %s", c.env, p, err, c.want)
		}
	}
	if _, err := SettingsPaths(OpenCode, func(string) string { return "" }); err == nil {
		t.Error("no HOME gave paths")
	}
}

// TestApply_OpenCode merges mcp.hearth into opencode.json (every other key
// kept, an older entry replaced), writes the plugin, replaces an older
// plugin of Hearth's but never another file of that name, and changes
// nothing on a second run.
func TestApply_OpenCode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := Paths{MCP: filepath.Join(dir, "opencode.json"), Hooks: filepath.Join(dir, "plugins", OpenCodePluginName)}
	oldConfig := `{"$schema": "https://opencode.ai/config.json", "model": "scripted/scripted", "mcp": {"github": {"type": "remote", "url": "https://example.com/mcp"}, "hearth": {"type": "remote", "url": "http://old/mcp"}}, "provider": {"x": {}}}`
	writeFile(t, p.MCP, oldConfig, 0o644)
	o := testOptions(OpenCode)
	o.TokenFile = "/home/ann/.config/hearth/opencode.token"
	now := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	changes, err := Apply(o, p, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 2 || changes[0].Backup == "" || changes[1].Backup != "" {
		t.Fatalf("changes = %+v, want opencode.json backed up and the plugin new", changes)
	}
	if got := readFile(t, changes[0].Backup); got != oldConfig {
		t.Errorf("backup = %s, want the old file", got)
	}
	var cfg struct {
		Schema string                    `json:"$schema"`
		Model  string                    `json:"model"`
		MCP    map[string]map[string]any `json:"mcp"`
	}
	if err := json.Unmarshal([]byte(readFile(t, p.MCP)), &cfg); err != nil {
		t.Fatal(err)
	}
	root, _ := ParseObject([]byte(readFile(t, p.MCP)))
	if keys := strings.Join(root.Keys(), ","); keys != "$schema,model,mcp,provider" || cfg.MCP["github"] == nil {
		t.Errorf("keys %s, mcp %v: other entries were not kept", keys, cfg.MCP)
	}
	h := cfg.MCP["hearth"]
	if auth, _ := h["headers"].(map[string]any); auth["Authorization"] != "Bearer {file:/home/ann/.config/hearth/opencode.token}" ||
		h["url"] != "http://hearth.lan:8765/mcp" || h["oauth"] != false || h["type"] != "remote" {
		t.Errorf("mcp.hearth = %v", cfg.MCP["hearth"])
	}
	plugin := readFile(t, p.Hooks)
	if plugin != string(OpenCodePlugin(o)) || !strings.Contains(plugin, `const FLAGS = ["--harness","opencode","--url","http://hearth.lan:8765","--token-file","/home/ann/.config/hearth/opencode.token"];`) {
		t.Errorf("plugin:\n%s", plugin)
	}
	if again, err := Apply(o, p, now); err != nil || len(again) != 0 {
		t.Errorf("second apply changed %+v (%v)", again, err)
	}
	// An older plugin of Hearth's is replaced, with a backup.
	o.URL = "http://other:8765"
	if changes, err := Apply(o, p, now); err != nil || len(changes) != 2 || changes[1].Backup == "" || readFile(t, changes[1].Backup) != plugin {
		t.Errorf("changes %+v (%v), want the old plugin replaced and backed up", changes, err)
	}
	// A file of the same name that is not Hearth's is left alone.
	writeFile(t, p.Hooks, "export const Mine = async () => ({})\n", 0o644)
	o.URL = "http://third:8765"
	if _, err := Apply(o, p, now); err == nil || !strings.Contains(err.Error(), "not Hearth's plugin") {
		t.Errorf("apply over another plugin: %v", err)
	}
	if got := readFile(t, p.Hooks); got != "export const Mine = async () => ({})\n" {
		t.Errorf("another plugin was changed: %s", got)
	}
	if _, err := os.Stat(p.Hooks + ".hearth-backup-20261207T040000Z-3"); err == nil {
		t.Error("a refused apply left a backup")
	}
}

// FuzzMergeOpenCodeConfig: any opencode.json is refused or merges into
// valid JSON whose mcp.hearth is Hearth's entry.
func FuzzMergeOpenCodeConfig(f *testing.F) {
	f.Add([]byte(`{"$schema":"https://opencode.ai/config.json","mcp":{"hearth":{"type":"local","command":["x"]},"b":{}}}`))
	f.Add([]byte(`{"mcp":7}`))
	f.Add([]byte(``))
	server := OpenCodeMCPServer(testOptions(OpenCode))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := mergeServer(data, "mcp", server)
		if err != nil {
			return
		}
		var cfg struct {
			MCP map[string]json.RawMessage `json:"mcp"`
		}
		if err := json.Unmarshal(out, &cfg); err != nil {
			t.Fatalf("merged into invalid JSON: %s (%v)", out, err)
		}
		got, _ := ParseObject(cfg.MCP[ServerName])
		if got == nil || string(got.Compact()) != string(server.Compact()) {
			t.Fatalf("mcp.hearth = %s", cfg.MCP[ServerName])
		}
	})
}
