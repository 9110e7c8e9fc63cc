// Hearth memory for OpenCode, written by "hearth connect opencode"
// (docs/opencode.md in the Hearth repository): it runs "hearth hook EVENT"
// with opencode's session, prompt and tool calls as JSON on stdin, and adds
// what a hook prints to the user's message as a synthetic text part.
import { spawn } from "node:child_process";

const HEARTH = "hearth";
const FLAGS = ["--harness","opencode"];
const TIMEOUT_MS = {"session-start":10000,"prompt":2000,"tool":2000,"compact":2000,"session-end":2000};

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
