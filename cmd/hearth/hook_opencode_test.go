package main

import (
	"context"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/cmd/hearth/internal/hook"
	"github.com/hearth-memory/hearth/server/options"
)

// openCodeOptions are the test options with an opencode client, whose token
// the opencode hooks use.
func openCodeOptions() options.Options {
	o := testOptions()
	o.Clients = append(o.Clients, options.Client{Name: "opencode", Scopes: []options.Scope{options.ScopeRead, options.ScopeWrite}})
	return o
}

// TestHook_OpenCode runs the hooks with the input Hearth's opencode plugin
// sends: session start and recall print plain text (the plugin adds it to
// the message as is), and session end closes once with the summary taken
// from the turns the plugin passes (opencode has no transcript file).
func TestHook_OpenCode(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, openCodeOptions())
	deploy := store(t, td, "github/acme/api", "procedure", "Deploy procedure for billing", "Deploy billing with make deploy once the canary passes.")
	e := newHookEnv(t, td, hook.OpenCode, "")
	start := e.run(t, "session-start", map[string]any{"session_id": "ses_oc1", "hook_event_name": "session.created", "source": "startup"})
	if !strings.HasPrefix(start, "Hearth memory for github/acme/api") || !strings.Contains(start, deploy) {
		t.Errorf("session-start printed %q, want the bootstrap as plain text", start)
	}
	recall := e.run(t, "prompt", map[string]any{"session_id": "ses_oc1", "hook_event_name": "chat.message", "prompt": `"how do we deploy billing?"`})
	if !strings.HasPrefix(recall, "Hearth memory that may bear on this prompt") || !strings.Contains(recall, "Deploy procedure for billing ["+deploy+"]") {
		t.Errorf("prompt printed %q, want the deploy record as plain text", recall)
	}
	if l := e.logText(); l != "" {
		t.Errorf("the hooks logged:\n%s", l)
	}
	before := len(closes(t, td))
	end := map[string]any{"session_id": "ses_oc1", "hook_event_name": "dispose", "reason": "exit", "messages": []map[string]string{
		{"role": "user", "text": "how do we deploy billing?"},
		{"role": "assistant", "text": "With make deploy, once the canary passes."},
	}}
	for i := 0; i < 2; i++ {
		if out := e.run(t, "session-end", end); out != "" {
			t.Errorf("session-end printed %q", out)
		}
	}
	ops := closes(t, td)
	if len(ops) != before+1 || !strings.HasPrefix(ops[0], "oc-") {
		t.Fatalf("closes %v, want exactly one more, oc-", ops)
	}
	rc, err := td.db.Receipt(context.Background(), ops[0])
	if err != nil {
		t.Fatal(err)
	}
	if rc.SessionID != "ses_oc1" || rc.Namespace != "github/acme/api" || !rc.SummaryKept {
		t.Errorf("receipt = %+v, want ses_oc1 in github/acme/api with the summary kept", rc)
	}
}
