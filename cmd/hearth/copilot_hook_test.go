package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/cmd/hearth/internal/hook"
	"github.com/hearth-memory/hearth/server/options"
)

// copilotOptions are the test options with a token client for GitHub
// Copilot CLI, as docs/copilot.md tells a user to add it.
func copilotOptions() options.Options {
	o := testOptions()
	o.Clients = append(o.Clients, options.Client{Name: "copilot", Scopes: []options.Scope{options.ScopeRead, options.ScopeWrite, options.ScopeDelete}})
	return o
}

// copilotContext returns the context a Copilot hook's output gives the
// model, checking the shape Copilot reads: one top-level additionalContext.
func copilotContext(t *testing.T, out string) string {
	t.Helper()
	var v map[string]string
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil || len(v) != 1 || v["additionalContext"] == "" {
		t.Fatalf("copilot output is not {additionalContext}: %q (%v)", out, err)
	}
	return v["additionalContext"]
}

// TestHook_Copilot runs the hooks as Copilot calls them (its PascalCase
// events' snake_case payloads, a "new" source, a session end without a
// transcript) against a real daemon: session start injects the bootstrap,
// prompt recall a stored record once, and session end closes the session
// once as the copilot client.
func TestHook_Copilot(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, copilotOptions())
	retry := store(t, td, "github/acme/api", "decision", "Retry policy for billing", "Retry idempotent billing calls three times with backoff.")
	e := newHookEnv(t, td, hook.Copilot, "")
	if e.cfg.Token == "" {
		t.Fatal("the daemon wrote no copilot token")
	}
	sid := map[string]any{"session_id": "4f0b7a52-2c4e-4d7e-9a51-6a1d2b8f3c11", "timestamp": "2026-12-07T03:58:47.707Z"}
	with := func(kv ...any) map[string]any {
		m := map[string]any{}
		for k, v := range sid {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	start := copilotContext(t, e.run(t, "session-start", with("hook_event_name", "SessionStart", "source", "new", "initial_prompt", "hi")))
	if !strings.Contains(start, "Hearth memory for github/acme/api") || !strings.Contains(start, retry) {
		t.Errorf("session start = %q, want the repository's bootstrap", start)
	}
	recall := copilotContext(t, e.run(t, "prompt", with("hook_event_name", "UserPromptSubmit", "prompt", "how do we retry billing calls?")))
	if !strings.Contains(recall, "Retry policy for billing ["+retry+"]") {
		t.Errorf("recall = %q, want the retry record", recall)
	}
	if again := e.run(t, "prompt", with("hook_event_name", "UserPromptSubmit", "prompt", "retry billing calls")); again != "" {
		t.Errorf("second recall printed %q, want nothing", again)
	}
	if l := e.logText(); l != "" {
		t.Errorf("hooks logged:\n%s", l)
	}
	// Copilot's -p mode ends the session after each turn: the same close
	// twice is one close. (In-process there is no drainer to start: the
	// hook delivers inline, so the close is there when it returns.)
	before := len(closes(t, td))
	for range 2 {
		if out := e.run(t, "session-end", with("hook_event_name", "SessionEnd", "reason", "complete")); out != "" {
			t.Errorf("session-end printed %q", out)
		}
	}
	ops := closes(t, td)
	if len(ops) != before+1 || !strings.HasPrefix(ops[0], "cp-") {
		t.Fatalf("closes %v, want exactly one more, with a cp- op", ops)
	}
	if rc, err := td.db.Receipt(context.Background(), ops[0]); err != nil || rc.SessionID != sid["session_id"] || rc.Namespace != "github/acme/api" || rc.SummaryKept {
		t.Errorf("receipt = %+v, %v; want the session in github/acme/api, without a summary (no events.jsonl)", rc, err)
	}

	// With the session's events.jsonl where Copilot keeps it, the close
	// carries the last answer as its summary.
	copilotHome := t.TempDir()
	events := filepath.Join(copilotHome, "session-state", "sess-cp-2", "events.jsonl")
	transcript, err := os.ReadFile(filepath.Join("internal", "hook", "testdata", "transcript", "copilot.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(events), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(events, transcript, 0o600); err != nil {
		t.Fatal(err)
	}
	e.cfg.Env = func(k string) string { return map[string]string{"COPILOT_HOME": copilotHome}[k] }
	e.run(t, "session-end", map[string]any{"session_id": "sess-cp-2", "hook_event_name": "SessionEnd", "reason": "complete"})
	ops = closes(t, td)
	if rc, err := td.db.Receipt(context.Background(), ops[0]); err != nil || rc.SessionID != "sess-cp-2" || !rc.SummaryKept {
		t.Errorf("receipt = %+v, %v; want session sess-cp-2 with its summary kept", rc, err)
	}
}

// TestRunConnect_Copilot: `hearth connect copilot --apply` writes
// mcp-config.json and hooks/hearth.json under COPILOT_HOME and says the MCP
// server reads $HEARTH_TOKEN.
func TestRunConnect_Copilot(t *testing.T) {
	// Not parallel: it sets the process environment (t.Setenv), which every test shares.
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("COPILOT_HOME", filepath.Join(home, "cp"))
	t.Setenv("HEARTH_URL", "")
	tokenFile := filepath.Join(home, "copilot.token")
	if err := os.WriteFile(tokenFile, []byte("hearth_x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := runConnect([]string{"copilot", "--url", "http://hearth.lan:8765", "--token-file", tokenFile, "--apply"}, &out, &errb); code != 0 {
		t.Fatalf("connect copilot --apply: exit %d: %s", code, errb.String())
	}
	for _, f := range []string{"mcp-config.json", filepath.Join("hooks", "hearth.json")} {
		b, err := os.ReadFile(filepath.Join(home, "cp", f))
		if err != nil || bytes.Contains(b, []byte("hearth_x")) {
			t.Errorf("%s: %v, or it holds the token", f, err)
		}
	}
	if !strings.Contains(out.String(), "$HEARTH_TOKEN") {
		t.Errorf("--apply said:\n%s", out.String())
	}
}
