package connect

import (
	"path"
)

// Where the plugins live in the repository. The repository's top level is
// fixed, so only the marketplace manifests each harness looks for sit at
// the root (.claude-plugin/ for Claude Code, .agents/plugins/ for Codex);
// the plugins themselves sit beside the command whose hooks they run.
const (
	ClaudePluginDir = "cmd/hearth/plugins/claude-code"
	CodexPluginDir  = "cmd/hearth/plugins/codex"
	// OpenCodePluginDir holds opencode's plugin module, to copy into
	// ~/.config/opencode/plugins/ (docs/opencode.md).
	OpenCodePluginDir = "cmd/hearth/plugins/opencode"
)

// pluginDescription is the plugins' one-line description.
const pluginDescription = "Hearth long-term memory: MCP tools, and hooks that inject the repository's memory at session start, recall related records with each prompt, capture edits, commands and compactions, and close the session at the end."

// PluginFiles returns every plugin and marketplace file, by path from the
// repository root. The plugins run `hearth` from PATH and read HEARTH_URL
// and HEARTH_TOKEN (or HEARTH_TOKEN_FILE) from the environment.
func PluginFiles(version string) map[string][]byte {
	files := map[string][]byte{}
	put := func(p string, o *Object) { files[p] = []byte(o.Indent() + "\n") }

	// Claude Code.
	cc := Options{Harness: ClaudeCode, Exe: "hearth"}
	put(".claude-plugin/marketplace.json", object(
		"name", ServerName,
		"owner", object("name", "Hearth"),
		"description", "Hearth, the long-term memory server for coding agents: its Claude Code plugin.",
		"plugins", []*Object{object(
			"name", ServerName,
			"source", "./"+ClaudePluginDir,
			"description", pluginDescription,
			"version", version,
		)},
	))
	put(path.Join(ClaudePluginDir, ".claude-plugin/plugin.json"), object(
		"name", ServerName,
		"version", version,
		"description", pluginDescription,
		"author", object("name", "Hearth"),
	))
	put(path.Join(ClaudePluginDir, "hooks/hooks.json"), object(
		"description", "Hearth memory: session-start bootstrap, prompt recall, capture of tool calls and compaction, session close",
		"hooks", Hooks(cc),
	))
	put(path.Join(ClaudePluginDir, ".mcp.json"), object(
		"mcpServers", object(ServerName, object(
			"type", "http",
			"url", "${HEARTH_URL:-http://127.0.0.1:8765}/mcp",
			"headers", object("Authorization", "Bearer ${"+TokenEnv+"}"),
		)),
	))

	// Codex.
	cx := Options{Harness: Codex, Exe: "hearth"}
	put(".agents/plugins/marketplace.json", object(
		"name", ServerName,
		"interface", object("displayName", "Hearth"),
		"plugins", []*Object{object(
			"name", ServerName,
			"source", "./"+CodexPluginDir,
		)},
	))
	put(path.Join(CodexPluginDir, ".codex-plugin/plugin.json"), object(
		"name", ServerName,
		"version", version,
		"description", pluginDescription,
		"mcpServers", "./.mcp.json",
		"hooks", "./hooks/hooks.json",
		"interface", object(
			"displayName", "Hearth",
			"shortDescription", "Long-term memory shared by your coding agents",
			"developerName", "Hearth",
		),
	))
	put(path.Join(CodexPluginDir, "hooks/hooks.json"), object("hooks", Hooks(cx)))
	put(path.Join(CodexPluginDir, ".mcp.json"), object(
		"mcpServers", object(ServerName, object(
			"url", "http://127.0.0.1:8765/mcp",
			"bearer_token_env_var", TokenEnv,
		)),
	))
	files[path.Join(OpenCodePluginDir, OpenCodePluginName)] = OpenCodePlugin(Options{Harness: OpenCode, Exe: "hearth"})
	return files
}

// object builds an Object from key, value pairs; a value is an *Object, a
// list of them, or anything encoding/json takes.
func object(kv ...any) *Object {
	o := &Object{}
	for i := 0; i+1 < len(kv); i += 2 {
		o.Set(kv[i].(string), value(kv[i+1]))
	}
	return o
}

func value(v any) []byte {
	switch v := v.(type) {
	case *Object:
		return v.Compact()
	case []*Object:
		b := []byte{'['}
		for i, o := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, o.Compact()...)
		}
		return append(b, ']')
	}
	return mustJSON(v)
}
