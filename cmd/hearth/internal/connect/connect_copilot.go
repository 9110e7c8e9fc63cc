package connect

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// CopilotHooksFile is the file of Hearth's hooks in Copilot's personal
// hooks folder ($COPILOT_HOME/hooks, else ~/.copilot/hooks), which
// Copilot reads whole, every *.json in it.
const CopilotHooksFile = "hearth.json"

// copilotPaths returns where GitHub Copilot CLI keeps its settings:
// $COPILOT_HOME, else ~/.copilot.
func copilotPaths(env func(string) string) (Paths, error) {
	d := env("COPILOT_HOME")
	if d == "" {
		home := env("HOME")
		if home == "" {
			return Paths{}, errors.New("HOME is not set")
		}
		d = filepath.Join(home, ".copilot")
	}
	return Paths{MCP: filepath.Join(d, "mcp-config.json"), Hooks: filepath.Join(d, "hooks", CopilotHooksFile)}, nil
}

// CopilotMCPServer is Copilot's MCP entry for Hearth (mcpServers.hearth in
// mcp-config.json). Copilot has no headers helper and reads no file, but
// it expands ${VAR} in a header from its environment, so the token stays
// out of the file (docs/copilot.md). Its tools reach the model as
// hearth-<tool>.
func CopilotMCPServer(o Options) *Object {
	return object(
		"type", "http",
		"url", o.URL+"/mcp",
		"headers", map[string]string{"Authorization": "Bearer ${" + TokenEnv + "}"},
		"tools", []string{"*"},
	)
}

// copilotText is the Copilot part of Text.
func copilotText(b *strings.Builder, o Options, hooks *Object) {
	fmt.Fprintf(b, "# Hearth for GitHub Copilot CLI, server %s.\n#\n", o.URL)
	fmt.Fprintf(b, "# 1. MCP tools, merged into ~/.copilot/mcp-config.json (or: copilot mcp add --transport http\n")
	fmt.Fprintf(b, "#    --header 'Authorization: Bearer ${%s}' %s %s/mcp):\n", TokenEnv, ServerName, o.URL)
	servers := object("mcpServers", object(ServerName, CopilotMCPServer(o)))
	fmt.Fprintf(b, "%s\n#\n", servers.Indent())
	fmt.Fprintf(b, "#    Copilot reads the token from $%s only: export %s=\"$(cat <token file>)\" where you start copilot.\n#\n", TokenEnv, TokenEnv)
	fmt.Fprintf(b, "# 2. Hooks (session-start bootstrap, prompt recall, capture, session close), in\n")
	fmt.Fprintf(b, "#    ~/.copilot/hooks/%s:\n%s\n#\n", CopilotHooksFile, hooks.Indent())
}
