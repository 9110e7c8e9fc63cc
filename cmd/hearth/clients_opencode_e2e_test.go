//go:build e2e

package main

// The end-to-end test with the real OpenCode CLI, offline: `make e2e`
// installs the pinned opencode and runs this with HEARTH_OPENCODE_CLI set.
// The model is a scripted test server speaking the OpenAI Chat Completions
// API, streamed, behind a custom provider (@ai-sdk/openai-compatible, which
// opencode bundles), so opencode itself makes the MCP tool call and runs
// Hearth's plugin (docs/opencode.md).

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage/testwait"
)

// openCodeCaptureStep is the scripted model's tool call after n tool
// results of a capture prompt about file, with opencode's tool names: run
// the check (it fails), read the file (opencode edits only a file it has
// read), edit it, run it again (it passes), run another check (it fails).
func openCodeCaptureStep(n int, file string) (string, map[string]any) {
	steps := []struct {
		name string
		args map[string]any
	}{
		{"bash", map[string]any{"command": "sh check.sh", "description": "Run the check"}},
		{"read", map[string]any{"filePath": file}},
		{"edit", map[string]any{"filePath": file, "oldString": "--- FAIL: TestCheck'\nexit 1", "newString": "ok'\nexit 0"}},
		{"bash", map[string]any{"command": "sh check.sh", "description": "Run the check"}},
		{"bash", map[string]any{"command": "sh other.sh", "description": "Run the other check"}},
	}
	if n >= len(steps) {
		return "", nil
	}
	return steps[n].name, steps[n].args
}

// chatServer speaks the OpenAI Chat Completions API as opencode's
// openai-compatible provider calls it (POST /v1/chat/completions, streamed
// as server-sent data lines). Its script: a user turn with captureTrigger
// runs openCodeCaptureStep and then answers "Captured."; a turn that ends
// in a tool result is answered "Stored."; a user turn that asks for
// storeTrigger gets a hearth_memory_store tool call; anything else gets
// "ok".
func chatServer(t *testing.T, storeInput map[string]any) *modelServer {
	m := &modelServer{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"object":"list","data":[{"id":"scripted","object":"model"}]}`)
			return
		}
		body, _ := io.ReadAll(r.Body)
		m.record(body)
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
			Tools []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
		}
		json.Unmarshal(body, &req)
		var last struct {
			Role    string
			Content json.RawMessage
		}
		if n := len(req.Messages); n > 0 {
			last.Role, last.Content = req.Messages[n-1].Role, req.Messages[n-1].Content
		}
		// The capture prompt's file, and the tool results since it.
		captureFile, results := "", 0
		for _, msg := range req.Messages {
			if m := capturePath.FindSubmatch(msg.Content); msg.Role == "user" && m != nil {
				captureFile, results = string(m[1]), 0
			} else if msg.Role == "tool" {
				results++
			}
		}
		storeTool := ""
		for _, tl := range req.Tools {
			if strings.HasSuffix(tl.Function.Name, "_memory_store") {
				storeTool = tl.Function.Name
			}
		}
		chunk := func(delta map[string]any, finish any) map[string]any {
			return map[string]any{"id": "chatcmpl-e2e", "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": req.Model,
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		data := func(v any) {
			b, _ := json.Marshal(v)
			fmt.Fprintf(w, "data: %s\n\n", b)
			w.(http.Flusher).Flush()
		}
		toolCall := func(name string, args any) {
			b, _ := json.Marshal(args)
			data(chunk(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": fmt.Sprintf("call_e2e_%d", len(req.Messages)), "type": "function",
				"function": map[string]any{"name": name, "arguments": string(b)}}}}, nil))
			data(chunk(map[string]any{}, "tool_calls"))
		}
		reply := func(text string) {
			data(chunk(map[string]any{"role": "assistant", "content": text}, nil))
			done := chunk(map[string]any{}, "stop")
			done["usage"] = map[string]int{"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}
			data(done)
		}
		step, args := openCodeCaptureStep(results, captureFile)
		switch {
		case captureFile != "" && args != nil:
			toolCall(step, args)
		case captureFile != "":
			reply("Captured.")
		case last.Role == "user" && strings.Contains(string(last.Content), storeTrigger) && storeTool != "":
			toolCall(storeTool, storeInput)
		case last.Role == "tool":
			reply("Stored.")
		default:
			reply("ok")
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(m.Close)
	return m
}

// openCodeHome makes a home whose opencode config names the scripted model
// as a custom provider, and returns it. opencode installs its plugin SDK
// (@opencode-ai/plugin) into its config directory at start and waits for
// npm to give up when there is no network; an empty node_modules and a lock
// file naming the package tell it the install is done (Hearth's plugin does
// not import the SDK).
func openCodeHome(t *testing.T, model string) string {
	t.Helper()
	home := t.TempDir()
	dir := filepath.Join(home, ".config", "opencode")
	if err := os.MkdirAll(filepath.Join(dir, "node_modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{
		"$schema": "https://opencode.ai/config.json", "model": "scripted/scripted", "autoupdate": false, "share": "disabled",
		"provider": map[string]any{"scripted": map[string]any{
			"npm": "@ai-sdk/openai-compatible", "name": "Scripted",
			"options": map[string]any{"baseURL": model + "/v1", "apiKey": "sk-e2e-not-a-key"},
			"models":  map[string]any{"scripted": map[string]any{"name": "Scripted"}},
		}},
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	for name, content := range map[string][]byte{
		"opencode.json":     b,
		"package-lock.json": []byte(`{"packages":{"":{"dependencies":{"@opencode-ai/plugin":"*"}}}}`),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// openCodeEnv is the environment opencode runs in: nothing inherited but
// PATH; no model catalogue fetch, update check, default plugins or share,
// and an npm registry that refuses at once.
func openCodeEnv(home, cache string) []string {
	return []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"), "HEARTH_CACHE_DIR=" + cache,
		"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"OPENCODE_DISABLE_SHARE=1", "npm_config_registry=http://127.0.0.1:9/",
	}
}

var openCodeSessionID = regexp.MustCompile(`"sessionID":"(ses_[A-Za-z0-9]+)"`)

// TestE2E_OpenCode proves with the real opencode CLI: the registration
// `hearth connect opencode --apply` writes connects with the token file (and
// fails with a wrong token); the plugin's session-start context and prompt
// recall reach the model in the user's message; a memory_store call
// opencode makes lands in Hearth as the opencode client; the session closes
// once at exit with a summary; a resumed session gets the bootstrap again
// (listing the stored record) and not the same recall twice; the commands
// and the edit it runs are captured.
func TestE2E_OpenCode(t *testing.T) {
	cli := os.Getenv("HEARTH_OPENCODE_CLI")
	if cli == "" {
		t.Skip("HEARTH_OPENCODE_CLI is not set: run make e2e")
	}
	// Not parallel, as the other CLI tests: the hooks answer within their
	// deadlines (prompt recall 300 ms) only when no other CLI loads the
	// machine's cores at the same time.
	bin := buildHearth(t)
	td := startDaemon(t, openCodeOptions())
	deploy := store(t, td, "github/acme/e2e", "procedure", "Deploy procedure for billing", "Deploy billing with make deploy once the canary passes.")
	repo := e2eRepo(t)
	model := chatServer(t, map[string]any{
		"namespace": "github/acme/e2e", "type": "decision", "title": storedTitle("opencode"),
		"content": "Billing deploys wait for a green canary.",
	})
	home, cache := openCodeHome(t, model.URL), t.TempDir()
	env := openCodeEnv(home, cache)
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte(td.tokens["opencode"]+"\n"), 0o600)

	connect := runCLI(t, repo, env, bin, "connect", "opencode", "--apply", "--url", td.url, "--token-file", tokenFile)
	if connect.err != nil {
		t.Fatalf("hearth connect: %v\n%s%s", connect.err, connect.stdout, connect.stderr)
	}
	config, _ := os.ReadFile(filepath.Join(home, ".config", "opencode", "opencode.json"))
	if strings.Contains(string(config), td.tokens["opencode"]) || !strings.Contains(string(config), "{file:"+tokenFile+"}") {
		t.Fatalf("opencode.json holds the token or not the file:\n%s", config)
	}

	t.Run("MCPConnects", func(t *testing.T) {
		r := runCLI(t, repo, env, cli, "mcp", "list")
		if !regexp.MustCompile(`✓ hearth \S*connected`).MatchString(r.stdout) {
			t.Fatalf("opencode mcp list: %v\n%s%s", r.err, r.stdout, r.stderr)
		}
	})
	t.Run("ErrWrongToken", func(t *testing.T) {
		home := openCodeHome(t, model.URL)
		wrong := filepath.Join(t.TempDir(), "wrong")
		os.WriteFile(wrong, []byte("hearth_not-a-token\n"), 0o600)
		env := openCodeEnv(home, t.TempDir())
		if r := runCLI(t, repo, env, bin, "connect", "opencode", "--apply", "--url", td.url, "--token-file", wrong); r.err != nil {
			t.Fatalf("hearth connect: %v\n%s", r.err, r.stderr)
		}
		r := runCLI(t, repo, env, cli, "mcp", "list")
		if !regexp.MustCompile(`✗ hearth \S*failed`).MatchString(r.stdout) {
			t.Fatalf("opencode mcp list with a wrong token: %v\n%s%s", r.err, r.stdout, r.stderr)
		}
	})

	var sid string
	t.Run("SessionStartRecallStoreClose", func(t *testing.T) {
		before := len(closes(t, td))
		r := runCLI(t, repo, env, cli, "run", "--format", "json", "--title", "e2e", "--auto", "How do we deploy billing? "+storeTrigger)
		m := openCodeSessionID.FindStringSubmatch(r.stdout)
		if r.err != nil || m == nil {
			t.Fatalf("opencode run: %v\n%s%s\nhook log: %s", r.err, r.stdout, r.stderr, hookLogIn(cache))
		}
		sid = m[1]
		reqs, _ := model.since(0)
		// The plugin adds both contexts to the user's message: the model
		// reads them with the prompt.
		var user string
		for _, raw := range reqs {
			var req struct {
				Messages []struct {
					Role    string          `json:"role"`
					Content json.RawMessage `json:"content"`
				} `json:"messages"`
			}
			json.Unmarshal(raw, &req)
			for _, msg := range req.Messages {
				if msg.Role == "user" && strings.Contains(string(msg.Content), "How do we deploy billing?") {
					user = string(msg.Content)
				}
			}
		}
		for _, want := range []string{
			"Hearth memory for github/acme/e2e", "procedure: Deploy procedure for billing [" + deploy + "]",
			"Hearth memory that may bear on this prompt", "Deploy billing with make deploy once the canary passes",
		} {
			if q, _ := json.Marshal(want); !strings.Contains(user, strings.Trim(string(q), `"`)) {
				t.Errorf("the user's message the model got lacks %q:\n%s\nhook log: %s", want, user, hookLogIn(cache))
			}
		}
		if !rawContains(reqs, `"role":"tool"`) {
			t.Error("no tool result reached the model")
		}
		found := restTransport{td}.call(t, td.tokens["claude-code"], "memory_search", map[string]any{"namespace": "github/acme/e2e", "query": storedTitle("opencode")})
		if str(found.body, "hits", 0, "title") != storedTitle("opencode") {
			t.Fatalf("the record opencode stored is not in Hearth: %s", found.raw)
		}
		got := restTransport{td}.call(t, td.tokens["claude-code"], "memory_get", map[string]any{"ids": []string{str(found.body, "hits", 0, "id")}})
		if w := str(got.body, "records", 0, "writer"); w != "opencode" {
			t.Errorf("writer = %q, want opencode", w)
		}
		testwait.WaitFor(t, "the session is closed", func() bool { return closesFor(t, td, sid) == 1 })
		ops := closes(t, td)
		rc, err := td.db.Receipt(t.Context(), ops[0])
		if err != nil || len(ops) != before+1 || rc.SessionID != sid || !rc.SummaryKept {
			t.Errorf("close receipt %+v (%v), want %s's close with its summary", rc, err, sid)
		}
	})

	// The resumed session also runs a check that fails, edits it, runs it
	// again and runs another failing check: the plugin's tool hook captures
	// the commands and the edit, and the server makes observations of them.
	t.Run("ResumeOnceAndCapture", func(t *testing.T) {
		if sid == "" {
			t.Skip("no session to resume")
		}
		for name, body := range map[string]string{"check.sh": "echo '--- FAIL: TestCheck'\nexit 1\n", "other.sh": "echo '--- FAIL: TestOther'\nexit 1\n"} {
			if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		check := filepath.Join(repo, "check.sh")
		from := model.count()
		r := runCLI(t, repo, env, cli, "run", "--format", "json", "--session", sid, "--auto",
			"And how do we deploy billing again? Make check.sh pass. "+captureTrigger+" path="+check)
		if r.err != nil || !strings.Contains(r.stdout, "Captured.") {
			t.Fatalf("opencode run --session: %v\n%s%s\nhook log: %s", r.err, r.stdout, r.stderr, hookLogIn(cache))
		}
		if b, _ := os.ReadFile(check); !strings.Contains(string(b), "exit 0") {
			t.Fatalf("the scripted edit did not run: check.sh is %q", b)
		}
		reqs, _ := model.since(from)
		if len(reqs) == 0 {
			t.Fatal("the resumed session asked the model nothing")
		}
		last := string(reqs[len(reqs)-1])
		// The bootstrap is injected again, now listing the record stored
		// through MCP; the recall of the deploy record is in the history
		// once, not injected a second time.
		listed := regexp.MustCompile(`- decision: ` + regexp.QuoteMeta(storedTitle("opencode")) + ` \[[0-9A-Z]+\](\\n|")`)
		if strings.Count(last, "Hearth memory for github/acme/e2e") != 2 || !listed.MatchString(last) {
			t.Errorf("the resumed session's bootstrap is missing or lacks the stored record:\n%s", last)
		}
		if n := strings.Count(last, "Deploy billing with make deploy once the canary passes"); n != 1 {
			t.Errorf("the deploy record was recalled %d times in the session, want once", n)
		}
		testwait.WaitFor(t, "the resumed session is closed again", func() bool { return closesFor(t, td, sid) == 2 })
		for _, title := range []string{"`sh check.sh` failed, then passed", "`sh other.sh` fails: TestOther"} {
			testwait.WaitFor(t, "an observation "+title, func() bool { return observationsIn(t, td, "github/acme/e2e")[title] != nil })
		}
	})
}
