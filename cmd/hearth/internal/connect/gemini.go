package connect

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// GeminiCLI is Gemini CLI (docs/gemini-cli.md). Its MCP servers and its
// hooks both live in one settings.json.
const GeminiCLI = "gemini-cli"

// Gemini CLI takes hook timeouts in milliseconds.
const msPerSecond = 1000

// geminiCaptureMatcher selects the Gemini CLI tools the tool hook
// captures: its shell, edit and write tools (a regular expression over
// tool names).
const geminiCaptureMatcher = "run_shell_command|replace|write_file"

// geminiHookEvents are Gemini CLI's events for Hearth's hooks, in the
// order they first fire. PreCompress is where Claude Code has PreCompact;
// BeforeAgent where it has UserPromptSubmit.
var geminiHookEvents = []struct {
	Name, Event, Matcher string
	Timeout              int
}{
	{Name: "SessionStart", Event: "session-start", Timeout: SessionStartTimeout},
	{Name: "BeforeAgent", Event: "prompt", Timeout: PromptTimeout},
	{Name: "AfterTool", Event: "tool", Timeout: CaptureTimeout, Matcher: geminiCaptureMatcher},
	{Name: "PreCompress", Event: "compact", Timeout: CaptureTimeout},
	{Name: "SessionEnd", Event: "session-end", Timeout: SessionEndTimeout},
}

// GeminiHooks returns Gemini CLI's hooks object for o: the shape of
// Claude Code's, with Gemini CLI's event names and timeouts in ms.
func GeminiHooks(o Options) *Object {
	obj := &Object{}
	for _, e := range geminiHookEvents {
		g := group{Matcher: e.Matcher, Hooks: []handler{{Type: "command", Command: HookCommand(o, e.Event), Timeout: e.Timeout * msPerSecond}}}
		obj.Set(e.Name, mustJSON([]group{g}))
	}
	return obj
}

// GeminiMCPServer is Gemini CLI's MCP entry for Hearth (mcpServers.hearth):
// streamable HTTP at httpUrl. Gemini CLI cannot read a header from a file
// or a helper command; it expands ${HEARTH_TOKEN} in settings.json from its
// environment when it loads the file, so the token stays out of the file.
func GeminiMCPServer(o Options) *Object {
	return object(
		"httpUrl", o.URL+"/mcp",
		"headers", object("Authorization", "Bearer ${"+TokenEnv+"}"),
	)
}

// geminiSettingsPath is Gemini CLI's user settings file:
// $GEMINI_CLI_HOME/.gemini/settings.json, else ~/.gemini/settings.json.
func geminiSettingsPath(env func(string) string) (string, error) {
	home := env("GEMINI_CLI_HOME")
	if home == "" {
		home = env("HOME")
	}
	if home == "" {
		return "", fmt.Errorf("HOME is not set")
	}
	return filepath.Join(home, ".gemini", "settings.json"), nil
}

// applyGemini merges the MCP entry and the hooks into the one settings
// file (p.MCP, which p.Hooks names too) in one write and one backup.
func applyGemini(o Options, p Paths, now time.Time) ([]Change, error) {
	c, err := rewrite(p.MCP, func(old []byte) ([]byte, error) {
		merged, err := mergeServer(old, "mcpServers", GeminiMCPServer(o))
		if err != nil {
			return nil, err
		}
		return mergeHooksFile(merged, GeminiHooks(o))
	}, now)
	if err != nil || c == nil {
		return nil, err
	}
	return []Change{*c}, nil
}

// geminiText is what `hearth connect gemini-cli` prints.
func geminiText(b *strings.Builder, o Options) {
	settings := &Object{}
	settings.Set("mcpServers", object(ServerName, GeminiMCPServer(o)).Compact())
	settings.Set("hooks", GeminiHooks(o).Compact())
	fmt.Fprintf(b, "# Hearth for Gemini CLI, server %s.\n#\n", o.URL)
	fmt.Fprintf(b, "# MCP tools and hooks (session-start bootstrap, prompt recall, capture, session close),\n")
	fmt.Fprintf(b, "# merged into ~/.gemini/settings.json ($GEMINI_CLI_HOME/.gemini/settings.json if set):\n%s\n#\n", settings.Indent())
	fmt.Fprintf(b, "# Gemini CLI reads the MCP token from $%s only (it expands ${%s} when it loads the file):\n", TokenEnv, TokenEnv)
	fmt.Fprintf(b, "# export %s=\"$(cat <token file>)\" where you start gemini.\n", TokenEnv)
	if o.TokenFile == "" {
		fmt.Fprintf(b, "# The hooks read it from $%s too.\n", TokenEnv)
	}
	fmt.Fprintf(b, "#\n")
}
