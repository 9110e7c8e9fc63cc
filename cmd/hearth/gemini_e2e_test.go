//go:build e2e

package main

// The end-to-end test with the real Gemini CLI, offline (docs/gemini-cli.md):
// `make e2e` installs the pinned CLI and runs it with HEARTH_GEMINI_CLI set
// to its JavaScript entry point. The model is a scripted test server
// speaking the Gemini API as Gemini CLI calls it (POST
// /v1beta/models/<model>:streamGenerateContent?alt=sse), reached through
// GOOGLE_GEMINI_BASE_URL with an API key that is never checked.

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/storage/testwait"
)

// geminiModel is the model the test asks for: naming one skips Gemini CLI's
// model router, which would ask the model server to classify each prompt.
const geminiModel = "gemini-2.5-flash"

// geminiCaptureScript is what the scripted Gemini model runs, one shell
// command per step, for a capture prompt: the check fails, an edit makes
// it pass, and another check is left failing.
var geminiCaptureScript = codexCaptureScript

// geminiServer speaks the Gemini API's streamed generateContent. Its
// script: a turn answering a function call gets "Stored." (or the next
// capture step); a user turn asking for storeTrigger gets a call of the
// memory_store tool Gemini CLI declared for Hearth's MCP server; anything
// else gets "ok".
func geminiServer(t *testing.T, storeInput map[string]any) *modelServer {
	m := &modelServer{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || !strings.Contains(r.URL.Path, ":streamGenerateContent") {
			// countTokens and anything else: not part of the script.
			http.Error(w, `{"error":{"code":404,"message":"not scripted","status":"NOT_FOUND"}}`, http.StatusNotFound)
			return
		}
		m.record(body)
		var req struct {
			Contents []struct {
				Role  string `json:"role"`
				Parts []struct {
					Text             string          `json:"text"`
					FunctionResponse json.RawMessage `json:"functionResponse"`
				} `json:"parts"`
			} `json:"contents"`
			Tools []struct {
				FunctionDeclarations []struct {
					Name string `json:"name"`
				} `json:"functionDeclarations"`
			} `json:"tools"`
		}
		json.Unmarshal(body, &req)
		// answered counts the function responses since the last user turn
		// that has text (its prompt, with what the hooks added as parts).
		answered, lastUser := 0, ""
		for _, c := range req.Contents {
			text := ""
			for _, p := range c.Parts {
				if len(p.FunctionResponse) > 0 {
					answered++
				}
				text += p.Text
			}
			if c.Role == "user" && text != "" {
				lastUser, answered = text, 0
			}
		}
		storeTool := ""
		for _, tl := range req.Tools {
			for _, f := range tl.FunctionDeclarations {
				if strings.HasSuffix(f.Name, "memory_store") {
					storeTool = f.Name
				}
			}
		}
		var part map[string]any
		switch capture := strings.Contains(string(body), captureTrigger); {
		case capture && answered < len(geminiCaptureScript):
			part = map[string]any{"functionCall": map[string]any{"name": "run_shell_command",
				"args": map[string]any{"command": geminiCaptureScript[answered], "description": "capture step"}}}
		case capture:
			part = map[string]any{"text": "Captured."}
		case answered > 0:
			part = map[string]any{"text": "Stored."}
		case strings.Contains(lastUser, storeTrigger) && storeTool != "":
			part = map[string]any{"functionCall": map[string]any{"name": storeTool, "args": storeInput}}
		default:
			part = map[string]any{"text": "ok"}
		}
		chunk := map[string]any{
			"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}}, "finishReason": "STOP", "index": 0}},
			"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 1, "totalTokenCount": 11},
			"modelVersion":  geminiModel,
		}
		b, _ := json.Marshal(chunk)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
	}))
	t.Cleanup(m.Close)
	return m
}

// geminiSettings are the settings a test home starts with: nothing that
// calls out (usage statistics, telemetry, update checks) and the API-key
// sign-in, so that the scripted server is the only thing it talks to.
const geminiSettings = `{
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
  "security": {"auth": {"selectedType": "gemini-api-key"}}
}
`

// TestE2E_GeminiCLI proves with the real Gemini CLI, offline: the settings
// `hearth connect gemini-cli --apply` writes connect its MCP client (and a
// wrong token does not); session-start and recall contexts reach the
// model's request; a memory_store call the CLI makes lands in Hearth with
// writer gemini-cli and a later session's bootstrap shows it; the capture
// hook records a failing, fixed and failing check; and every session
// closes once. Not parallel, like the other TestE2E tests: each gemini run
// starts node on a 100 MB bundle, and the prompt hook must answer within
// its 300 ms deadline, which it cannot when CLIs share a busy machine.
func TestE2E_GeminiCLI(t *testing.T) {
	entry := os.Getenv("HEARTH_GEMINI_CLI")
	if entry == "" {
		t.Skip("HEARTH_GEMINI_CLI is not set: run make e2e")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH")
	}
	bin := buildHearth(t)
	o := testOptions()
	o.Clients = append(o.Clients, options.Client{Name: "gemini-cli", Scopes: []options.Scope{options.ScopeRead, options.ScopeWrite}})
	td := startDaemon(t, o)
	deploy := store(t, td, "github/acme/e2e", "procedure", "Deploy procedure for billing", "Deploy billing with make deploy once the canary passes.")
	repo := e2eRepo(t)
	home := t.TempDir()
	cache := t.TempDir()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(td.tokens["gemini-cli"]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(home, ".gemini", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, []byte(geminiSettings), 0o600); err != nil {
		t.Fatal(err)
	}
	model := geminiServer(t, map[string]any{
		"namespace": "github/acme/e2e", "type": "decision", "title": storedTitle("gemini-cli"),
		"content": "Billing deploys wait for a green canary.",
	})
	env := []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"), "HEARTH_CACHE_DIR=" + cache,
		"HEARTH_TOKEN=" + td.tokens["gemini-cli"],
		"GEMINI_API_KEY=e2e-not-a-key", "GOOGLE_GEMINI_BASE_URL=" + model.URL,
		// Headless runs refuse an untrusted folder; the relaunch only
		// raises the heap limit and would start node twice.
		"GEMINI_CLI_TRUST_WORKSPACE=true", "GEMINI_CLI_NO_RELAUNCH=true",
	}
	gemini := func(t *testing.T, env []string, args ...string) cliRun {
		t.Helper()
		return runCLI(t, repo, env, node, append([]string{entry}, args...)...)
	}
	// run runs one headless session and returns its output (-o json) and
	// session id; every session must close once, and the test ends only
	// after its detached session-end work is done.
	var sessions []string
	t.Cleanup(func() {
		for _, sid := range sessions {
			testwait.WaitFor(t, "session "+sid+" is closed", func() bool { return closesFor(t, td, sid) == 1 })
		}
		testwait.WaitFor(t, "the spool is empty", func() bool { return len(spooledIn(cache)) == 0 })
		testwait.WaitFor(t, "the session-end hooks are done", func() bool { return len(hookProcesses(bin)) == 0 })
	})
	type result struct {
		SessionID string `json:"session_id"`
		Response  string `json:"response"`
	}
	run := func(t *testing.T, prompt string) (cliRun, result) {
		t.Helper()
		r := gemini(t, env, "-m", geminiModel, "--yolo", "-o", "json", "-p", prompt)
		var out result
		if r.err != nil || json.Unmarshal([]byte(r.stdout), &out) != nil || out.SessionID == "" {
			t.Fatalf("gemini -p: %v\n%s%s\nhook.log:\n%s", r.err, r.stdout, r.stderr, hookLogIn(cache))
		}
		sessions = append(sessions, out.SessionID)
		return r, out
	}

	connect := runCLI(t, repo, env, bin, "connect", "gemini-cli", "--apply", "--url", td.url, "--token-file", tokenFile)
	if connect.err != nil {
		t.Fatalf("hearth connect: %v\n%s%s", connect.err, connect.stdout, connect.stderr)
	}
	if b, _ := os.ReadFile(settings); strings.Contains(string(b), td.tokens["gemini-cli"]) || !strings.Contains(string(b), `"usageStatisticsEnabled": false`) {
		t.Fatalf("settings.json after connect holds the token or lost a setting:\n%s", b)
	}

	t.Run("MCPConnects", func(t *testing.T) {
		r := gemini(t, env, "mcp", "list")
		if !strings.Contains(r.stdout+r.stderr, "hearth: "+td.url+"/mcp (http) - Connected") {
			t.Fatalf("gemini mcp list: %v\n%s%s", r.err, r.stdout, r.stderr)
		}
		wrong := append(slices.Clone(env), "HEARTH_TOKEN=hearth_wrong")
		r = gemini(t, wrong, "mcp", "list")
		if out := r.stdout + r.stderr; strings.Contains(out, "- Connected") || !strings.Contains(out, "hearth: "+td.url+"/mcp (http) - Disconnected") {
			t.Fatalf("gemini mcp list with a wrong token: %v\n%s", r.err, out)
		}
	})

	var sid1 string
	t.Run("SessionStartRecallAndStore", func(t *testing.T) {
		from := model.count()
		r, out := run(t, "How do we deploy billing? "+storeTrigger)
		sid1 = out.SessionID
		reqs, _ := model.since(from)
		if len(reqs) == 0 {
			t.Fatal("the model server got no request")
		}
		// The first request is what the model reads first: the session
		// start's bootstrap and the recalled record are in it.
		first := reqs[:1]
		if !containsAny(first, "Hearth memory for github/acme/e2e") || !containsAny(first, "Deploy procedure for billing ["+deploy+"]") {
			t.Errorf("the first request lacks the session-start context:\n%.3000s", first[0])
		}
		if !containsAny(first, "Hearth memory that may bear on this prompt") {
			t.Errorf("the first request lacks the recall context\nhook.log:\n%s", hookLogIn(cache))
		}
		if out.Response != "Stored." {
			if !strings.Contains(string(reqs[0]), "memory_store") {
				t.Errorf("Hearth's MCP tools never reached the model")
			}
			t.Fatalf("the model's memory_store call did not complete: response %q\n%s", out.Response, r.stderr)
		}
		found := restTransport{td}.call(t, td.tokens["claude-code"], "memory_search", map[string]any{"namespace": "github/acme/e2e", "query": storedTitle("gemini-cli")})
		if str(found.body, "hits", 0, "title") != storedTitle("gemini-cli") {
			t.Fatalf("the record Gemini CLI stored is not in Hearth: %s", found.raw)
		}
		got := restTransport{td}.call(t, td.tokens["claude-code"], "memory_get", map[string]any{"ids": []string{str(found.body, "hits", 0, "id")}})
		if str(got.body, "records", 0, "writer") != "gemini-cli" {
			t.Errorf("writer = %q, want gemini-cli", str(got.body, "records", 0, "writer"))
		}
		testwait.WaitFor(t, "session 1 is closed", func() bool { return closesFor(t, td, sid1) == 1 })
	})

	// A session whose scripted model runs a failing check, fixes it, runs
	// it again and runs another failing check leaves observations; the next
	// session's start (and its request) says where it left off, and lists
	// the record the first session stored.
	t.Run("CaptureAndNextStart", func(t *testing.T) {
		for name, body := range map[string]string{"check.sh": "echo '--- FAIL: TestCheck'\nexit 1\n", "other.sh": "echo '--- FAIL: TestOther'\nexit 1\n"} {
			if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		r, out := run(t, "Make check.sh pass. "+captureTrigger)
		if out.Response != "Captured." {
			t.Fatalf("gemini did not finish the script:\n%s%s\nhook.log:\n%s", r.stdout, r.stderr, hookLogIn(cache))
		}
		if b, _ := os.ReadFile(filepath.Join(repo, "check.sh")); !strings.Contains(string(b), "exit 0") {
			t.Fatalf("the scripted edit did not run: check.sh is %q", b)
		}
		from := model.count()
		run(t, "hello")
		obs := observationsIn(t, td, "github/acme/e2e")
		for _, title := range []string{"`sh check.sh` failed, then passed", "`sh other.sh` fails: TestOther"} {
			if obs[title] == nil {
				t.Errorf("no observation %q; have %v\nhook.log:\n%s", title, slices.Sorted(maps.Keys(obs)), hookLogIn(cache))
			}
		}
		reqs, _ := model.since(from)
		if len(reqs) == 0 || !containsAny(reqs[:1], "Where we left off") || !containsAny(reqs[:1], "left failing: `sh other.sh`: TestOther") {
			t.Errorf("the next session's start does not say where the last one left off\nhook.log:\n%s", hookLogIn(cache))
		}
		if len(reqs) == 0 || !containsAny(reqs[:1], storedTitle("gemini-cli")) {
			t.Error("the later session's bootstrap lacks the stored record")
		}
	})
}
