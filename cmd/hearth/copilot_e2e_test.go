//go:build e2e

package main

// The end-to-end test with the real GitHub Copilot CLI, offline: `make e2e`
// installs the pinned CLI and runs this with HEARTH_COPILOT_CLI set. The
// model is Copilot's BYOK provider pointed at anthropicServer (Copilot
// speaks the Anthropic Messages API with COPILOT_PROVIDER_TYPE=anthropic),
// so Copilot itself runs the hooks and makes the MCP tool call.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage/testwait"
)

// copilotHookContexts returns the additionalContext of every hook of type
// hookType (sessionStart, userPromptSubmitted) Copilot recorded in a
// session's events.jsonl.
func copilotHookContexts(t *testing.T, copilotHome, sessionID, hookType string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(copilotHome, "session-state", sessionID, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		var ev struct {
			Type string `json:"type"`
			Data struct {
				HookType string `json:"hookType"`
				Success  bool   `json:"success"`
				Output   struct {
					AdditionalContext string `json:"additionalContext"`
				} `json:"output"`
			} `json:"data"`
		}
		if json.Unmarshal([]byte(line), &ev) != nil || ev.Type != "hook.end" || ev.Data.HookType != hookType || !ev.Data.Success {
			continue
		}
		if c := ev.Data.Output.AdditionalContext; c != "" {
			out = append(out, c)
		}
	}
	return out
}

// hearthRunning reports whether a process of the hearth binary bin runs
// (a hook, or the drainer one started).
func hearthRunning(bin string) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.HasPrefix(string(cmdline), bin+"\x00") {
			return true
		}
	}
	return false
}

// waitCloses waits up to a minute for n closes of a session (a drainer on
// a machine busy with the other CLIs' tests takes its time) and fails
// with the hooks' log and spool, and Copilot's log lines about its
// session-end hooks, when they do not come.
func waitCloses(t *testing.T, td *testDaemon, sessionID string, n int, cache, copilotHome string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for closesFor(t, td, sessionID) != n {
		if time.Now().After(deadline) {
			var lines []string
			logs, _ := filepath.Glob(filepath.Join(copilotHome, "logs", "*.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				for _, line := range strings.Split(string(b), "\n") {
					if strings.Contains(strings.ToLower(line), "sessionend") {
						lines = append(lines, line)
					}
				}
			}
			t.Fatalf("closes of %s: %d, want %d\nhook.log:\n%s\nspool: %v\ncopilot's log on sessionEnd:\n%s",
				sessionID, closesFor(t, td, sessionID), n, hookLogIn(cache), spooledIn(cache), strings.Join(lines, "\n"))
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, not waiting for time
	}
}

// TestE2E_CopilotCLI proves with the real Copilot CLI (docs/copilot.md):
// the configuration `hearth connect copilot --apply` writes is read, and
// its MCP server serves the model's memory_store call as the copilot
// client; a wrong token offers the model no Hearth tool; `copilot -p` runs
// the hooks, and the session-start bootstrap and the recalled record are
// in the model's request; a resumed session is not shown the same record
// twice; each run of the session closes it once, with its summary; and
// /compact is captured.
func TestE2E_CopilotCLI(t *testing.T) {
	cli := os.Getenv("HEARTH_COPILOT_CLI")
	if cli == "" {
		t.Skip("HEARTH_COPILOT_CLI is not set: run make e2e")
	}
	bin := buildHearth(t)
	td := startDaemon(t, copilotOptions())
	deploy := store(t, td, "github/acme/e2e", "procedure", "Deploy procedure for billing", "Deploy billing with make deploy once the canary passes.")
	repo := e2eRepo(t)
	home := t.TempDir()
	copilotHome := filepath.Join(home, ".copilot")
	cache := t.TempDir()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(td.tokens["copilot"]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	model := anthropicServer(t, map[string]any{
		"namespace": "github/acme/e2e", "type": "decision", "title": storedTitle("copilot"),
		"content": "Billing deploys wait for a green canary.",
	})
	env := []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"),
		// The binary unpacks its JavaScript (235 MB) into the cache on
		// first run: one cache beside the install, not one per test.
		"XDG_CACHE_HOME=" + filepath.Join(filepath.Dir(cli), ".cache"),
		"COPILOT_OFFLINE=true", "COPILOT_AUTO_UPDATE=false",
		"COPILOT_PROVIDER_TYPE=anthropic", "COPILOT_PROVIDER_BASE_URL=" + model.URL,
		"COPILOT_PROVIDER_API_KEY=sk-e2e-not-a-key", "COPILOT_MODEL=claude-sonnet-4.5",
		"HEARTH_TOKEN=" + td.tokens["copilot"], "HEARTH_CACHE_DIR=" + cache,
	}
	// Registered after the temporary folders, so it runs before they are
	// removed: a detached drainer a session end started may still write
	// its log there.
	t.Cleanup(func() {
		testwait.WaitFor(t, "the hooks' drainers exit", func() bool { return !hearthRunning(bin) })
	})
	connect := runCLI(t, repo, env, bin, "connect", "copilot", "--apply", "--url", td.url, "--token-file", tokenFile)
	if connect.err != nil {
		t.Fatalf("hearth connect: %v\n%s%s", connect.err, connect.stdout, connect.stderr)
	}
	prompt := func(t *testing.T, env []string, args ...string) cliRun {
		t.Helper()
		full := append([]string{"--allow-all-tools", "--no-auto-update", "--no-ask-user"}, args...)
		r := runCLI(t, repo, env, cli, full...)
		if r.err != nil {
			t.Fatalf("copilot %s: %v\n%s%s\nhook.log:\n%s", strings.Join(full, " "), r.err, r.stdout, r.stderr, hookLogIn(cache))
		}
		return r
	}

	t.Run("MCPRegistered", func(t *testing.T) {
		r := runCLI(t, repo, env, cli, "mcp", "get", "hearth")
		if !strings.Contains(r.stdout, "URL: "+td.url+"/mcp") || !strings.Contains(r.stdout, "Source: User") || strings.Contains(r.stdout, td.tokens["copilot"]) {
			t.Fatalf("copilot mcp get hearth: %v\n%s%s", r.err, r.stdout, r.stderr)
		}
	})

	sid := newUUID(t)
	t.Run("SessionStartRecallAndStore", func(t *testing.T) {
		from := model.count()
		r := prompt(t, env, "-p", "How do we deploy billing? "+storeTrigger, "--session-id", sid)
		if !strings.Contains(r.stdout, "Stored.") {
			t.Errorf("copilot said:\n%s%s", r.stdout, r.stderr)
		}
		reqs, _ := model.since(from)
		if !containsAny(reqs, "Hearth memory for github/acme/e2e") || !containsAny(reqs, "Deploy procedure for billing ["+deploy+"]") {
			t.Errorf("the model's requests lack the session-start context\nhook.log:\n%s", hookLogIn(cache))
		}
		if !containsAny(reqs, "Hearth memory that may bear on this prompt") {
			t.Errorf("the model's requests lack the recall context\nhook.log:\n%s", hookLogIn(cache))
		}
		if !rawContains(reqs, `"name":"hearth-memory_store"`) {
			t.Error("Hearth's MCP tools never reached the model")
		}
		if c := copilotHookContexts(t, copilotHome, sid, "sessionStart"); countContaining(c, "Hearth memory for github/acme/e2e") != 1 {
			t.Errorf("session-start contexts in events.jsonl: %q", c)
		}
		found := restTransport{td}.call(t, td.tokens["claude-code"], "memory_search", map[string]any{"namespace": "github/acme/e2e", "query": storedTitle("copilot")})
		if str(found.body, "hits", 0, "title") != storedTitle("copilot") {
			t.Fatalf("the record Copilot stored is not in Hearth: %s", found.raw)
		}
		got := restTransport{td}.call(t, td.tokens["claude-code"], "memory_get", map[string]any{"ids": []string{str(found.body, "hits", 0, "id")}})
		if str(got.body, "records", 0, "writer") != "copilot" {
			t.Errorf("writer = %q, want copilot", str(got.body, "records", 0, "writer"))
		}
		waitCloses(t, td, sid, 1, cache, copilotHome)
	})

	t.Run("RecallNotTwiceInASession", func(t *testing.T) {
		prompt(t, env, "-p", "How do we deploy billing again?", "--resume="+sid)
		recalled := 0
		for _, c := range copilotHookContexts(t, copilotHome, sid, "userPromptSubmitted") {
			if strings.Contains(c, "Hearth memory that may bear on this prompt") && strings.Contains(c, deploy) {
				recalled++
			}
		}
		if recalled != 1 {
			t.Errorf("the deploy record was recalled %d times in one session, want once", recalled)
		}
		if n := len(copilotHookContexts(t, copilotHome, sid, "sessionStart")); n < 2 {
			t.Errorf("%d session-start contexts after resume, want the bootstrap again", n)
		}
		// Every -p turn ends the session; the resumed one ends with more
		// transcript, so it closes again under a new op_id, with the
		// summary read from events.jsonl.
		// Copilot may run SessionEnd before it has written the turn's last
		// answer to events.jsonl (seen once in several runs): that close
		// goes without a summary, so one of the two must carry it.
		waitCloses(t, td, sid, 2, cache, copilotHome)
		withSummary := 0
		for _, op := range closes(t, td) {
			if rc, err := td.db.Receipt(context.Background(), op); err == nil && rc.SessionID == sid && rc.SummaryKept {
				withSummary++
			}
		}
		if withSummary == 0 {
			t.Error("no close of the session has a summary: events.jsonl was not read")
		}
	})

	t.Run("CompactCaptured", func(t *testing.T) {
		if lo, err := td.db.LeftOff(context.Background(), "github/acme/e2e", ""); err != nil || lo != nil {
			t.Fatalf("before /compact: left off %+v, %v; want nothing captured", lo, err)
		}
		// In -p mode the slash command compacts the resumed conversation;
		// it runs PreCompact alone, whose hook sends the event within 80 ms
		// of its start or leaves it in the spool. The next run's hooks
		// deliver what waits (on a busy machine the 80 ms can pass).
		prompt(t, env, "-p", "/compact", "--resume="+sid)
		prompt(t, env, "-p", "And now?", "--resume="+sid)
		testwait.WaitFor(t, "the compaction is captured", func() bool {
			lo, err := td.db.LeftOff(context.Background(), "github/acme/e2e", "")
			return err == nil && lo != nil && lo.SessionID == sid && lo.Harness == "copilot"
		})
	})

	t.Run("MCPRefusesWrongToken", func(t *testing.T) {
		wrong := append(slices.Clone(env), "HEARTH_TOKEN=hearth_wrong")
		from := model.count()
		prompt(t, wrong, "-p", "Store this. "+storeTrigger)
		reqs, _ := model.since(from)
		if len(reqs) == 0 || rawContains(reqs, `"name":"hearth-memory_store"`) {
			t.Errorf("with a wrong token the model was offered Hearth's tools (%d requests)", len(reqs))
		}
	})
}
