package connect

import (
	"fmt"
	"path/filepath"
	"strings"
)

// OpenCode is opencode (npm opencode-ai). It registers MCP servers in its
// config file (opencode.json, key mcp) and has no command hooks: Hearth's
// hooks reach it as a plugin module opencode loads from its config
// directory's plugins/ folder, which runs `hearth hook … --harness
// opencode` (docs/opencode.md).
const OpenCode = "opencode"

// OpenCodePluginName is the plugin module's file name in plugins/.
const OpenCodePluginName = "hearth.js"

// openCodeConfigDir is opencode's global config directory:
// $OPENCODE_CONFIG_DIR, else $XDG_CONFIG_HOME/opencode, else
// ~/.config/opencode.
func openCodeConfigDir(env func(string) string) (string, error) {
	if d := env("OPENCODE_CONFIG_DIR"); d != "" {
		return d, nil
	}
	if d := env("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "opencode"), nil
	}
	home := env("HOME")
	if home == "" {
		return "", fmt.Errorf("HOME is not set")
	}
	return filepath.Join(home, ".config", "opencode"), nil
}

// OpenCodeMCPServer is opencode's MCP entry for Hearth (the value of
// mcp.hearth). opencode substitutes {file:PATH} in its config with the
// file's content (trimmed) and {env:NAME} with the variable, so the token
// stays in its file, or in HEARTH_TOKEN without a token file. oauth false
// keeps opencode from starting an OAuth flow when Hearth answers 401.
func OpenCodeMCPServer(o Options) *Object {
	auth := "Bearer {env:" + TokenEnv + "}"
	if o.TokenFile != "" {
		auth = "Bearer {file:" + o.TokenFile + "}"
	}
	return object(
		"type", "remote",
		"url", o.URL+"/mcp",
		"enabled", true,
		"oauth", false,
		"headers", object("Authorization", auth),
	)
}

// openCodeHooks are the plugin's hook timeouts by event, in milliseconds:
// the plugin kills a hook that runs longer.
var openCodeHooks = []struct {
	Event   string
	Timeout int
}{
	{"session-start", SessionStartTimeout},
	{"prompt", PromptTimeout},
	{"tool", CaptureTimeout},
	{"compact", CaptureTimeout},
	{"session-end", SessionEndTimeout},
}

// OpenCodePlugin is the plugin module for o: the hearth command and its
// flags, then the code in openCodePluginJS.
func OpenCodePlugin(o Options) []byte {
	argv := hookArgv(o, "EVENT")
	timeouts := &Object{}
	for _, h := range openCodeHooks {
		timeouts.Set(h.Event, mustJSON(h.Timeout*1000))
	}
	var b strings.Builder
	b.WriteString(openCodePluginHead)
	fmt.Fprintf(&b, "const HEARTH = %s;\n", mustJSON(argv[0]))
	fmt.Fprintf(&b, "const FLAGS = %s;\n", mustJSON(argv[3:]))
	fmt.Fprintf(&b, "const TIMEOUT_MS = %s;\n", timeouts.Compact())
	b.WriteString(openCodePluginJS)
	return []byte(b.String())
}

// ownOpenCodePlugin reports whether a plugin file is Hearth's, so --apply
// replaces it; any other file at that name is left alone.
func ownOpenCodePlugin(content []byte) bool {
	return len(content) == 0 || strings.HasPrefix(string(content), openCodePluginHead)
}

// mergeOpenCodePlugin is the plugin file --apply writes: Hearth's own,
// replacing an older one; a file of the same name that is not Hearth's is
// an error.
func mergeOpenCodePlugin(old []byte, o Options) ([]byte, error) {
	if !ownOpenCodePlugin(old) {
		return nil, fmt.Errorf("not Hearth's plugin; move it away to install Hearth's")
	}
	return OpenCodePlugin(o), nil
}

// openCodeText is what `hearth connect opencode` prints.
func openCodeText(b *strings.Builder, o Options) {
	mcp := object("mcp", object(ServerName, OpenCodeMCPServer(o)))
	fmt.Fprintf(b, "# Hearth for OpenCode, server %s.\n#\n", o.URL)
	fmt.Fprintf(b, "# 1. MCP tools, merged into ~/.config/opencode/opencode.json:\n%s\n#\n", mcp.Indent())
	if o.TokenFile != "" {
		fmt.Fprintf(b, "#    opencode reads the token from %s ({file:…}) when it loads its config.\n#\n", o.TokenFile)
	} else {
		fmt.Fprintf(b, "#    opencode reads the token from $%s ({env:…}): export %s=\"$(cat <token file>)\" where you start opencode.\n#\n", TokenEnv, TokenEnv)
	}
	fmt.Fprintf(b, "# 2. Hooks (session-start bootstrap, prompt recall, capture, session close) as a plugin,\n")
	fmt.Fprintf(b, "#    ~/.config/opencode/plugins/%s:\n%s#\n", OpenCodePluginName, OpenCodePlugin(o))
}

// openCodePluginHead starts every plugin file Hearth writes.
const openCodePluginHead = `// Hearth memory for OpenCode, written by "hearth connect opencode"
// (docs/opencode.md in the Hearth repository): it runs "hearth hook EVENT"
// with opencode's session, prompt and tool calls as JSON on stdin, and adds
// what a hook prints to the user's message as a synthetic text part.
import { spawn } from "node:child_process";

`

// openCodePluginJS is the plugin's code after its settings (HEARTH, FLAGS,
// TIMEOUT_MS). Every failure leaves the session as it was: a hook that
// cannot start, fails or runs past its timeout gives no context.
const openCodePluginJS = `
// Tools whose calls the capture keeps (docs/capture.md): edits and commands.
const CAPTURED = new Set(["bash", "edit", "write", "apply_patch"]);
// The newest turns kept per session for its close and a compaction.
const MAX_TURNS = 40;

function hook(event, input) {
  return new Promise((resolve) => {
    let out = "";
    let child;
    try {
      child = spawn(HEARTH, ["hook", event, ...FLAGS], { stdio: ["pipe", "pipe", "ignore"] });
    } catch {
      resolve("");
      return;
    }
    const timer = setTimeout(() => child.kill("SIGKILL"), TIMEOUT_MS[event]);
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (d) => { out += d; });
    child.on("error", () => { clearTimeout(timer); resolve(""); });
    child.on("close", () => { clearTimeout(timer); resolve(out.trim()); });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(input));
  });
}

export const HearthMemory = async ({ directory }) => {
  const starts = new Map(); // session id -> its session-start context (a promise)
  const injected = new Set(); // sessions whose session-start context is in a message
  const due = new Map(); // session id -> "compact" when its next prompt gets session-start context again
  const children = new Set(); // subagent sessions: no hooks
  const turns = new Map(); // session id -> [{role, text}]
  const roles = new Map(); // message id -> role
  const kept = new Set(); // text parts already in turns
  const input = (sessionID, event, extra) => ({ session_id: sessionID, cwd: directory, hook_event_name: event, ...extra });
  const start = (sessionID, source) => {
    if (!starts.has(sessionID)) {
      starts.set(sessionID, hook("session-start", input(sessionID, "session.created", { source })));
    }
    return starts.get(sessionID);
  };
  const remember = (sessionID, role, text) => {
    const list = turns.get(sessionID) ?? [];
    list.push({ role, text });
    turns.set(sessionID, list.slice(-MAX_TURNS));
  };
  return {
    event: async ({ event }) => {
      const p = event.properties ?? {};
      if (event.type === "session.created" && p.info) {
        if (p.info.parentID) children.add(p.info.id);
        else start(p.info.id, "startup");
      } else if (event.type === "message.updated" && p.info) {
        roles.set(p.info.id, p.info.role);
      } else if (event.type === "message.part.updated" && p.part?.type === "text" && !p.part.synthetic &&
        p.part.time?.end && roles.get(p.part.messageID) === "assistant" && !kept.has(p.part.id)) {
        kept.add(p.part.id);
        remember(p.part.sessionID, "assistant", p.part.text);
      }
    },
    "chat.message": async (info, output) => {
      const sessionID = info.sessionID;
      if (children.has(sessionID)) return;
      const prompt = output.parts.filter((p) => p.type === "text" && !p.synthetic).map((p) => p.text).join("\n").trim();
      const context = [];
      if (!injected.has(sessionID) || due.has(sessionID)) {
        // startup: session.created started it; resume: a session this
        // process did not create; compact: its context was cut.
        const source = due.get(sessionID) ?? (starts.has(sessionID) ? "startup" : "resume");
        if (due.delete(sessionID)) starts.delete(sessionID);
        injected.add(sessionID);
        context.push(await start(sessionID, source));
      }
      if (prompt) {
        context.push(await hook("prompt", input(sessionID, "chat.message", { prompt })));
        remember(sessionID, "user", prompt);
      }
      const base = output.parts.at(-1)?.id ?? "prt_" + Date.now().toString(16);
      context.filter((text) => text).forEach((text, i) => {
        output.parts.push({ id: base + "hearth" + i, sessionID, messageID: output.message.id, type: "text", text, synthetic: true });
      });
    },
    "tool.execute.after": async (info, output) => {
      if (!CAPTURED.has(info.tool) || children.has(info.sessionID)) return;
      const metadata = { exit: output?.metadata?.exit, exists: output?.metadata?.exists };
      await hook("tool", input(info.sessionID, "tool.execute.after", {
        tool_name: info.tool, tool_input: info.args ?? {}, tool_use_id: info.callID,
        tool_response: { output: typeof output?.output === "string" ? output.output : "", metadata },
      }));
    },
    "experimental.session.compacting": async (info) => {
      await hook("compact", input(info.sessionID, "session.compacting", { trigger: "auto", messages: turns.get(info.sessionID) ?? [] }));
      due.set(info.sessionID, "compact");
    },
    dispose: async () => {
      const ended = [...turns].filter(([, list]) => list.some((t) => t.role === "user"));
      turns.clear();
      await Promise.all(ended.map(([sessionID, list]) => hook("session-end", input(sessionID, "dispose", { reason: "exit", messages: list }))));
    },
  };
};
`
