// Package connect is `hearth connect`: the MCP registration and hooks
// configuration that connect Claude Code or Codex to Hearth, printed for a
// user to paste, merged into the user's settings, or written out as the
// plugins in the repository. One set of functions makes all three, so they
// cannot drift apart.
package connect

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Harnesses `hearth connect` knows.
const (
	ClaudeCode = "claude-code"
	Codex      = "codex"
	Copilot    = "copilot"
)

// Harnesses lists every harness `hearth connect` knows, in the order its
// help and messages name them.
var Harnesses = []string{ClaudeCode, Codex, Copilot, OpenCode, GeminiCLI}

// CheckHarness refuses a harness `hearth connect` does not know, naming
// the ones it does.
func CheckHarness(harness string) error {
	if slices.Contains(Harnesses, harness) {
		return nil
	}
	return unknownHarness(harness)
}

// unknownHarness is the error for a harness none of Harnesses is.
func unknownHarness(harness string) error {
	last := len(Harnesses) - 1
	return fmt.Errorf("harness %q: want %s or %s", harness, strings.Join(Harnesses[:last], ", "), Harnesses[last])
}

// ServerName is the name Hearth's MCP server is registered under; its tools
// appear as mcp__hearth__<tool>.
const ServerName = "hearth"

// TokenEnv is the environment variable the MCP registrations read the
// token from.
const TokenEnv = "HEARTH_TOKEN"

// Hook timeouts, in seconds, as the harnesses take them. Session start may
// wait on a slow network once; prompt recall answers in 300 ms or says
// nothing; session end only spools the close and returns.
const (
	SessionStartTimeout = 10
	PromptTimeout       = 2
	SessionEndTimeout   = 2
	// CaptureTimeout bounds the tool and compact hooks, which spool an
	// event and send what waits within 80 ms (docs/capture.md).
	CaptureTimeout = 2
)

// captureMatcher selects the Claude Code tools the tool hook captures:
// edits and shell commands (docs/capture.md). Codex's tools are named
// otherwise (apply_patch, shell), so its hook matches every tool and the
// hook itself passes over the rest.
const captureMatcher = "Bash|Edit|MultiEdit|Write|NotebookEdit"

// Options say what to connect.
type Options struct {
	// Harness is ClaudeCode or Codex.
	Harness string
	// URL is Hearth's base URL (no /mcp).
	URL string
	// TokenFile, when set, is the file the hooks (and Claude Code's MCP
	// headers helper) read the token from; otherwise both read HEARTH_TOKEN.
	TokenFile string
	// Exe is the hearth command the hooks run: an absolute path for a
	// user's settings, "hearth" (from PATH) for the plugins.
	Exe string
	// PassURL puts --url into the hook commands (when the URL is not the
	// default and HEARTH_URL may not be set where the harness runs).
	PassURL bool
	// CAFile, when set, is the PEM file of CA certificates the hooks trust
	// for an https URL.
	CAFile string
}

// hookEvents are the hooks in the order they first fire, with each one's
// `hearth hook` event and timeout. The tool hooks run in step in both
// harnesses and return within their 80 ms deadline: Claude Code's -p mode
// exits without waiting for an async hook, which lost a session's last
// tool event (docs/capture.md). PreCompact stays async in Claude Code;
// Codex skips async command hooks, so there it runs in step. Codex has
// no PostToolUseFailure: its PostToolUse carries a failed command too.
// GitHub Copilot CLI takes Claude Code's event names and nesting
// (docs/copilot.md); its hooks run in step, without matchers.
var hookEvents = []struct {
	Name, Event string
	Timeout     int
	// Matcher selects tools (Claude Code); Async runs the hook in the
	// background (Claude Code); NotCodex leaves the event out for Codex.
	Matcher  string
	Async    bool
	NotCodex bool
}{
	{Name: "SessionStart", Event: "session-start", Timeout: SessionStartTimeout},
	{Name: "UserPromptSubmit", Event: "prompt", Timeout: PromptTimeout},
	{Name: "PostToolUse", Event: "tool", Timeout: CaptureTimeout, Matcher: captureMatcher},
	{Name: "PostToolUseFailure", Event: "tool", Timeout: CaptureTimeout, Matcher: captureMatcher, NotCodex: true},
	{Name: "PreCompact", Event: "compact", Timeout: CaptureTimeout, Async: true},
	{Name: "SessionEnd", Event: "session-end", Timeout: SessionEndTimeout},
}

// HookCommand is the shell command of one hook.
func HookCommand(o Options, event string) string {
	argv := hookArgv(o, event)
	for i, a := range argv {
		argv[i] = shellQuote(a)
	}
	return strings.Join(argv, " ")
}

// hookArgv is the command line of one hook, unquoted: the hearth command,
// hook, the event, then the harness and connection flags.
func hookArgv(o Options, event string) []string {
	argv := []string{o.Exe, "hook", event, "--harness", o.Harness}
	if o.PassURL {
		argv = append(argv, "--url", o.URL)
	}
	if o.TokenFile != "" {
		argv = append(argv, "--token-file", o.TokenFile)
	}
	if o.CAFile != "" {
		argv = append(argv, "--ca-file", o.CAFile)
	}
	return argv
}

// ownHook reports whether a hook command is one of Hearth's: `… hook
// <event> --harness <harness>`. Merging replaces such entries.
func ownHook(command string) bool {
	for _, e := range hookEvents {
		if strings.Contains(command, " hook "+e.Event+" --harness ") {
			return true
		}
	}
	return false
}

// handler is one command hook.
type handler struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout"`
	Async   bool   `json:"async,omitempty"`
}

// group is one matcher group of an event; without a matcher it matches
// everything.
type group struct {
	Matcher string    `json:"matcher,omitempty"`
	Hooks   []handler `json:"hooks"`
}

// Hooks returns the hooks object ({"SessionStart": [...], ...}) for o,
// events in firing order: the same shape for every harness, but Codex
// gets no PostToolUseFailure, and only Claude Code gets matchers and async
// flags.
func Hooks(o Options) *Object {
	obj := &Object{}
	claude := o.Harness == ClaudeCode
	for _, e := range hookEvents {
		if e.NotCodex && o.Harness == Codex {
			continue
		}
		g := group{Hooks: []handler{{Type: "command", Command: HookCommand(o, e.Event), Timeout: e.Timeout}}}
		if claude {
			g.Matcher, g.Hooks[0].Async = e.Matcher, e.Async
		}
		obj.Set(e.Name, mustJSON([]group{g}))
	}
	return obj
}

// ClaudeMCPServer is Claude Code's MCP entry for Hearth (the value of
// mcpServers.hearth). With a token file, a headers helper (`hearth hook
// mcp-headers`) reads it when Claude Code connects; otherwise the header
// reads ${HEARTH_TOKEN}, which Claude Code expands from its environment.
// Either way the token is in no settings file.
func ClaudeMCPServer(o Options) *Object {
	obj := &Object{}
	obj.Set("type", mustJSON("http"))
	obj.Set("url", mustJSON(o.URL+"/mcp"))
	if o.TokenFile != "" {
		obj.Set("headersHelper", mustJSON(shellQuote(o.Exe)+" hook mcp-headers --token-file "+shellQuote(o.TokenFile)))
	} else {
		obj.Set("headers", mustJSON(map[string]string{"Authorization": "Bearer ${" + TokenEnv + "}"}))
	}
	return obj
}

// CodexMCPTOML is Codex's config.toml table for Hearth. Codex reads a
// bearer token only from an environment variable.
func CodexMCPTOML(o Options) string {
	return fmt.Sprintf("[mcp_servers.%s]\nurl = %s\nbearer_token_env_var = %q\n", ServerName, tomlString(o.URL+"/mcp"), TokenEnv)
}

// Text is what `hearth connect <harness>` prints: the registration and the
// hooks, with where each goes.
func Text(o Options) string {
	var b strings.Builder
	hooks := &Object{}
	hooks.Set("hooks", Hooks(o).Compact())
	switch o.Harness {
	case ClaudeCode:
		server := ClaudeMCPServer(o)
		fmt.Fprintf(&b, "# Hearth for Claude Code, server %s.\n#\n", o.URL)
		fmt.Fprintf(&b, "# 1. MCP tools, for every project (user scope):\n")
		fmt.Fprintf(&b, "claude mcp add-json --scope user %s %s\n#\n", ServerName, shellQuote(string(server.Compact())))
		if o.TokenFile != "" {
			fmt.Fprintf(&b, "#    Claude Code runs `hearth hook mcp-headers` to read the token from %s when it connects.\n#\n", o.TokenFile)
		} else {
			fmt.Fprintf(&b, "#    Claude Code expands ${%s} from its environment when it connects:\n", TokenEnv)
			fmt.Fprintf(&b, "#    export %s=\"$(cat <token file>)\" where you start claude.\n#\n", TokenEnv)
		}
		fmt.Fprintf(&b, "# 2. Hooks (session-start bootstrap, prompt recall, session close), merged into\n")
		fmt.Fprintf(&b, "#    ~/.claude/settings.json:\n%s\n#\n", hooks.Indent())
	case Codex:
		fmt.Fprintf(&b, "# Hearth for Codex, server %s.\n#\n", o.URL)
		fmt.Fprintf(&b, "# 1. MCP tools, in ~/.codex/config.toml (or: codex mcp add %s --url %s/mcp --bearer-token-env-var %s):\n", ServerName, o.URL, TokenEnv)
		fmt.Fprintf(&b, "%s#\n", CodexMCPTOML(o))
		fmt.Fprintf(&b, "#    Codex reads the token from $%s only: export %s=\"$(cat <token file>)\" where you start codex.\n#\n", TokenEnv, TokenEnv)
		fmt.Fprintf(&b, "# 2. Hooks (session-start bootstrap, prompt recall, session close), merged into\n")
		fmt.Fprintf(&b, "#    ~/.codex/hooks.json; then trust them once with /hooks in codex:\n%s\n#\n", hooks.Indent())
	case Copilot:
		copilotText(&b, o, hooks)
	case OpenCode:
		openCodeText(&b, o)
	case GeminiCLI:
		geminiText(&b, o)
	}
	fmt.Fprintf(&b, "# `hearth connect %s --apply` merges both into your settings, keeping every other entry,\n# with a backup of each file it changes.\n", o.Harness)
	return b.String()
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// tomlString is s as a TOML basic string.
func tomlString(s string) string {
	return string(mustJSON(s)) // JSON escapes are valid TOML basic-string escapes
}

func mustJSON(v any) json.RawMessage {
	b, err := marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
