//go:build e2e

package main

// End-to-end tests with the real Claude Code and Codex CLIs, offline: `make
// e2e` installs the pinned CLIs and runs these with HEARTH_CLAUDE_CLI and
// HEARTH_CODEX_CLI set. The model behind each CLI is a scripted test server
// speaking that CLI's real wire protocol (Anthropic Messages, OpenAI
// Responses, both streamed as server-sent events), so the CLI itself makes
// the MCP tool calls.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/storage/testwait"
)

// storeTrigger in a prompt makes a scripted model call memory_store once.
const storeTrigger = "E2E-STORE"

// captureTrigger in a prompt, followed by " path=<file>", makes the
// scripted Anthropic model run the file as a shell script (it fails), read
// it, edit it and run it again (it passes): the calls capture observes.
const captureTrigger = "E2E-CAPTURE"

// captureScript is the scripted model's tool call after n tool results of a
// capture prompt about file, or nil when the script is done.
func captureScript(n int, file string) map[string]any {
	run := map[string]any{"command": "sh " + filepath.Base(file), "description": "Run the check"}
	steps := []struct {
		name  string
		input map[string]any
	}{
		{"Bash", run},
		{"Read", map[string]any{"file_path": file}},
		{"Edit", map[string]any{"file_path": file, "old_string": "--- FAIL: TestCheck'\nexit 1", "new_string": "ok'\nexit 0"}},
		{"Bash", run},
	}
	if n >= len(steps) {
		return nil
	}
	return map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_e2e_capture_%d", n), "name": steps[n].name, "input": steps[n].input}
}

var capturePath = regexp.MustCompile(captureTrigger + ` path=(\S+?)(?:\\|"|\s|$)`)

// codexCaptureScript is what the scripted Responses model runs, one shell
// command per step, for a capture prompt: the check fails, an edit makes
// it pass, and another check is left failing.
var codexCaptureScript = []string{"sh check.sh", "sed -i 's/--- FAIL: TestCheck/ok/; s/exit 1/exit 0/' check.sh", "sh check.sh", "sh other.sh"}

// storedTitle is the title of the record the scripted models store.
func storedTitle(harness string) string {
	return "Canary before every billing deploy (" + harness + ")"
}

// cliRun is one CLI invocation's output.
type cliRun struct {
	stdout, stderr string
	err            error
}

// runCLI runs bin with args in dir and env (nothing inherited but PATH),
// giving it two minutes.
func runCLI(t *testing.T, dir string, env []string, bin string, args ...string) cliRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = strings.NewReader("")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return cliRun{out.String(), errb.String(), err}
}

// e2eRepo makes a checkout whose origin is github.com/acme/e2e.
func e2eRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "e2e")
	if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("[remote \"origin\"]\n\turl = git@github.com:acme/e2e.git\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func newUUID(t *testing.T) string {
	t.Helper()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// closesFor counts the session-close receipts of one session id.
func closesFor(t *testing.T, td *testDaemon, sessionID string) int {
	t.Helper()
	n := 0
	for _, op := range closes(t, td) {
		if rc, err := td.db.Receipt(context.Background(), op); err == nil && rc.SessionID == sessionID {
			n++
		}
	}
	return n
}

// hookProcesses lists running processes of bin's session-end hook: a hook
// the harness failed to kill.
func hookProcesses(bin string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 2 && args[0] == bin && args[1] == "hook" && args[2] == "session-end" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// modelServer is a scripted model behind a CLI: it records every request
// and answers by script.
type modelServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []json.RawMessage
}

func (m *modelServer) record(b []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, append(json.RawMessage(nil), b...))
}

// seen returns the requests recorded from index from on, and the count.
func (m *modelServer) since(from int) ([]json.RawMessage, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]json.RawMessage(nil), m.requests[from:]...), len(m.requests)
}

func (m *modelServer) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.requests)
}

// sse writes one server-sent event.
func sse(w io.Writer, event string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// anthropicServer speaks the Anthropic Messages API as Claude Code calls it
// (POST /v1/messages, streamed). Its script: a user turn carrying a
// tool_result is answered "Stored."; a user turn that asks for storeTrigger
// gets a memory_store tool call; anything else gets "ok".
func anthropicServer(t *testing.T, storeInput map[string]any) *modelServer {
	m := &modelServer{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(r.URL.Path, "count_tokens") {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"input_tokens":100}`)
			return
		}
		m.record(body)
		var req struct {
			Model    string `json:"model"`
			Stream   bool   `json:"stream"`
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		json.Unmarshal(body, &req)
		// The user's turn is every message after the last assistant one:
		// Claude Code sends the prompt and its system reminders apart.
		var last string
		for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role != "assistant"; i-- {
			last += string(req.Messages[i].Content)
		}
		storeTool := ""
		for _, tl := range req.Tools {
			if strings.HasSuffix(tl.Name, "__memory_store") || tl.Name == "hearth-memory_store" { // Copilot: hearth-<tool>
				storeTool = tl.Name
			}
		}
		text := "ok"
		var toolUse map[string]any
		var args any = storeInput
		m := capturePath.FindSubmatch(body)
		switch {
		case m != nil:
			text = "Captured."
			if toolUse = captureScript(bytes.Count(body, []byte(`"type":"tool_result"`)), string(m[1])); toolUse != nil {
				args = toolUse["input"]
				toolUse = map[string]any{"type": "tool_use", "id": toolUse["id"], "name": toolUse["name"], "input": map[string]any{}}
			}
		case strings.Contains(last, `"tool_result"`):
			text = "Stored."
		case strings.Contains(last, storeTrigger) && storeTool != "":
			toolUse = map[string]any{"type": "tool_use", "id": "toolu_e2e_1", "name": storeTool, "input": map[string]any{}}
		}
		msg := map[string]any{"id": "msg_e2e", "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 10, "output_tokens": 1}}
		if !req.Stream {
			msg["content"] = []any{map[string]string{"type": "text", "text": text}}
			msg["stop_reason"] = "end_turn"
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(msg)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "message_start", map[string]any{"type": "message_start", "message": msg})
		stop := "end_turn"
		if toolUse != nil {
			args, _ := json.Marshal(args)
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": toolUse})
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(args)}})
			stop = "tool_use"
		} else {
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]string{"type": "text", "text": ""}})
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]string{"type": "text_delta", "text": text}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 2}})
		sse(w, "message_stop", map[string]any{"type": "message_stop"})
	}))
	t.Cleanup(m.Close)
	return m
}

// responsesServer speaks the OpenAI Responses API as Codex calls it (POST
// /v1/responses, streamed), with the same script as anthropicServer: MCP
// tools reach the model as a namespace (mcp__hearth) of functions.
func responsesServer(t *testing.T, storeInput map[string]any) *modelServer {
	m := &modelServer{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"object":"list","data":[]}`)
			return
		}
		body, _ := io.ReadAll(r.Body)
		m.record(body)
		var req struct {
			Input []json.RawMessage `json:"input"`
			Tools []struct {
				Type  string `json:"type"`
				Name  string `json:"name"`
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			} `json:"tools"`
		}
		json.Unmarshal(body, &req)
		hasOutput, lastUser := false, ""
		for _, it := range req.Input {
			var item struct {
				Type string          `json:"type"`
				Role string          `json:"role"`
				Raw  json.RawMessage `json:"content"`
			}
			json.Unmarshal(it, &item)
			switch {
			case item.Type == "function_call_output":
				hasOutput = true
			case item.Type == "message" && item.Role == "user":
				lastUser, hasOutput = string(item.Raw), false
			}
		}
		ns := ""
		for _, tl := range req.Tools {
			for _, f := range tl.Tools {
				if tl.Type == "namespace" && f.Name == "memory_store" {
					ns = tl.Name
				}
			}
		}
		var item map[string]any
		outputs := bytes.Count(body, []byte(`"type":"function_call_output"`))
		switch {
		case strings.Contains(string(body), captureTrigger) && outputs < len(codexCaptureScript):
			// The capture script: a shell command per step, through
			// Codex's exec_command tool.
			args, _ := json.Marshal(map[string]any{"cmd": codexCaptureScript[outputs]})
			item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_cap_%d", outputs), "call_id": fmt.Sprintf("call_cap_%d", outputs),
				"name": "exec_command", "arguments": string(args), "status": "completed"}
		case !hasOutput && strings.Contains(lastUser, storeTrigger) && ns != "":
			args, _ := json.Marshal(storeInput)
			item = map[string]any{"type": "function_call", "id": "fc_e2e", "call_id": "call_e2e", "namespace": ns,
				"name": "memory_store", "arguments": string(args), "status": "completed"}
		default:
			text := "ok"
			switch {
			case strings.Contains(string(body), captureTrigger):
				text = "Captured."
			case hasOutput:
				text = "Stored."
			}
			item = map[string]any{"type": "message", "id": "msg_e2e", "role": "assistant", "status": "completed",
				"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
		}
		resp := map[string]any{"id": "resp_e2e", "object": "response", "status": "in_progress", "output": []any{}}
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "response.created", map[string]any{"type": "response.created", "response": resp})
		sse(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
		sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
		resp["status"], resp["output"] = "completed", []any{item}
		resp["usage"] = map[string]any{"input_tokens": 10, "output_tokens": 1, "total_tokens": 11,
			"input_tokens_details": map[string]int{"cached_tokens": 0}, "output_tokens_details": map[string]int{"reasoning_tokens": 0}}
		sse(w, "response.completed", map[string]any{"type": "response.completed", "response": resp})
	}))
	t.Cleanup(m.Close)
	return m
}

// containsAny reports whether any of the raw requests holds s, as JSON
// encodes it.
func containsAny(reqs []json.RawMessage, s string) bool {
	q, _ := json.Marshal(s)
	needle := strings.Trim(string(q), `"`)
	for _, r := range reqs {
		if strings.Contains(string(r), needle) {
			return true
		}
	}
	return false
}

// rawContains reports whether any of the raw requests holds the JSON text s.
func rawContains(reqs []json.RawMessage, s string) bool {
	for _, r := range reqs {
		if bytes.Contains(r, []byte(s)) {
			return true
		}
	}
	return false
}

// claudeTranscript reads the transcript Claude Code wrote for a session.
func claudeTranscript(t *testing.T, home, sessionID string) string {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", sessionID+".jsonl"))
	if len(matches) != 1 {
		t.Fatalf("transcript of %s: found %v", sessionID, matches)
	}
	b, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// hookContexts returns the hook contexts of one event Claude Code wrote into
// a transcript (attachments of type hook_additional_context).
func hookContexts(transcript, event string) []string {
	var out []string
	for _, line := range strings.Split(transcript, "\n") {
		var l struct {
			Attachment struct {
				Type      string   `json:"type"`
				HookEvent string   `json:"hookEvent"`
				Content   []string `json:"content"`
			} `json:"attachment"`
		}
		if json.Unmarshal([]byte(line), &l) != nil || l.Attachment.Type != "hook_additional_context" || l.Attachment.HookEvent != event {
			continue
		}
		out = append(out, strings.Join(l.Attachment.Content, "\n"))
	}
	return out
}

func countContaining(list []string, s string) int {
	n := 0
	for _, x := range list {
		if strings.Contains(x, s) {
			n++
		}
	}
	return n
}

// TestE2E_ClaudeCode proves with the real Claude Code CLI: the registration
// `hearth connect claude-code --apply` writes connects; session-start
// context reaches the transcript and the model; prompt recall injects a
// stored record once per session; a memory_store call the CLI makes lands in
// Hearth and a later session's bootstrap shows it; session end closes once,
// also when Claude Code kills the hook after one second; and the plugin
// installs from the repository as a marketplace and runs.
func TestE2E_ClaudeCode(t *testing.T) {
	cli := os.Getenv("HEARTH_CLAUDE_CLI")
	if cli == "" {
		t.Skip("HEARTH_CLAUDE_CLI is not set: run make e2e")
	}
	bin := buildHearth(t)
	td := startDaemon(t, testOptions())
	deploy := store(t, td, "github/acme/e2e", "procedure", "Deploy procedure for billing", "Deploy billing with make deploy once the canary passes.")
	repo := e2eRepo(t)
	home := t.TempDir()
	cache := t.TempDir()
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte(td.tokens["claude-code"]+"\n"), 0o600)
	model := anthropicServer(t, map[string]any{
		"namespace": "github/acme/e2e", "type": "decision", "title": storedTitle("claude-code"),
		"content": "Billing deploys wait for a green canary.",
	})
	env := []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"), "ANTHROPIC_BASE_URL=" + model.URL, "ANTHROPIC_API_KEY=sk-e2e-not-a-key",
		"ENABLE_TOOL_SEARCH=false", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS=1000", "HEARTH_CACHE_DIR=" + cache,
	}

	// The registration hearth connect writes: MCP with a headers helper
	// reading the token file, and the three hooks.
	connect := runCLI(t, repo, env, bin, "connect", "claude-code", "--apply", "--url", td.url, "--token-file", tokenFile)
	if connect.err != nil {
		t.Fatalf("hearth connect: %v\n%s%s", connect.err, connect.stdout, connect.stderr)
	}
	t.Run("MCPConnects", func(t *testing.T) {
		r := runCLI(t, repo, env, cli, "mcp", "list")
		if want := "hearth: " + td.url + "/mcp (HTTP) - ✔ Connected"; !strings.Contains(r.stdout, want) {
			t.Fatalf("claude mcp list: %v\n%s%s\nwant %q", r.err, r.stdout, r.stderr, want)
		}
	})

	// Issue #12: an unknown token is told 401 at connect time, so Claude Code
	// shows the server as failed, not connected with tools that then fail.
	t.Run("MCPRefusesWrongToken", func(t *testing.T) {
		wrongHome := t.TempDir()
		wrong := append(slices.Clone(env), "HOME="+wrongHome)
		for _, args := range [][]string{
			{"mcp", "add", "--transport", "http", "hearth", td.url + "/mcp", "--header", "Authorization: Bearer hearth_wrong"},
			{"mcp", "list"},
		} {
			r := runCLI(t, repo, wrong, cli, args...)
			if args[1] != "list" {
				if r.err != nil {
					t.Fatalf("claude %v: %v\n%s%s", args, r.err, r.stdout, r.stderr)
				}
				continue
			}
			if strings.Contains(r.stdout, "✔ Connected") || !strings.Contains(r.stdout, "401") {
				t.Errorf("claude mcp list with a wrong token: %v\n%s%s\nwant a failure naming HTTP 401", r.err, r.stdout, r.stderr)
			}
		}
	})

	sid1 := newUUID(t)
	t.Run("SessionStartRecallAndStore", func(t *testing.T) {
		from := model.count()
		r := runCLI(t, repo, env, cli, "-p", "How do we deploy billing? "+storeTrigger, "--session-id", sid1,
			"--allowedTools", "mcp__hearth__memory_store")
		if r.err != nil || !strings.Contains(r.stdout, "Stored.") {
			reqs, _ := model.since(from)
			for _, q := range reqs {
				var req struct {
					Tools []struct {
						Name string `json:"name"`
					} `json:"tools"`
					Messages []struct {
						Content json.RawMessage `json:"content"`
					} `json:"messages"`
				}
				json.Unmarshal(q, &req)
				var names []string
				for _, tl := range req.Tools {
					names = append(names, tl.Name)
				}
				last := ""
				if n := len(req.Messages); n > 0 {
					last = string(req.Messages[n-1].Content)
				}
				t.Logf("request: tools %v; last message %.400s", names, last)
			}
			t.Fatalf("claude -p: %v\n%s%s", r.err, r.stdout, r.stderr)
		}
		tr := claudeTranscript(t, home, sid1)
		if starts := hookContexts(tr, "SessionStart"); countContaining(starts, "Hearth memory for github/acme/e2e") != 1 ||
			countContaining(starts, "Deploy procedure for billing ["+deploy+"]") != 1 {
			t.Errorf("SessionStart contexts in the transcript: %q", starts)
		}
		if recalls := hookContexts(tr, "UserPromptSubmit"); countContaining(recalls, deploy) != 1 {
			t.Errorf("UserPromptSubmit contexts in the transcript: %q\nhook.log:\n%s", recalls, hookLogIn(cache))
		}
		reqs, _ := model.since(from)
		if !containsAny(reqs, "Hearth memory for github/acme/e2e") || !containsAny(reqs, "Hearth memory that may bear on this prompt") {
			t.Error("the model's requests lack the session-start or recall context")
		}
		// The tool call ran through Claude Code's MCP client into Hearth, as
		// the claude-code client (the headers helper's token), and its
		// result went back to the model.
		if !rawContains(reqs, `"type":"tool_result"`) {
			t.Error("no tool result reached the model")
		}
		found := restTransport{td}.call(t, td.tokens["codex"], "memory_search", map[string]any{"namespace": "github/acme/e2e", "query": storedTitle("claude-code")})
		if str(found.body, "hits", 0, "title") != storedTitle("claude-code") {
			t.Fatalf("the record Claude Code stored is not in Hearth: %s", found.raw)
		}
		got := restTransport{td}.call(t, td.tokens["codex"], "memory_get", map[string]any{"ids": []string{str(found.body, "hits", 0, "id")}})
		if str(got.body, "records", 0, "writer") != "claude-code" {
			t.Errorf("writer = %q, want claude-code", str(got.body, "records", 0, "writer"))
		}
		testwait.WaitFor(t, "session 1 is closed", func() bool { return closesFor(t, td, sid1) == 1 })
	})

	t.Run("RecallNotTwiceInASession", func(t *testing.T) {
		r := runCLI(t, repo, env, cli, "-p", "How do we deploy billing again?", "--resume", sid1)
		if r.err != nil {
			t.Fatalf("claude -p --resume: %v\n%s%s", r.err, r.stdout, r.stderr)
		}
		tr := claudeTranscript(t, home, sid1)
		if starts := hookContexts(tr, "SessionStart"); countContaining(starts, "Hearth memory for github/acme/e2e") < 2 {
			t.Errorf("resume did not inject the session-start context again: %q", starts)
		}
		if n := countContaining(hookContexts(tr, "UserPromptSubmit"), deploy); n != 1 {
			t.Errorf("the deploy record was recalled %d times in one session, want once", n)
		}
	})

	t.Run("LaterSessionBootstrapShowsStore", func(t *testing.T) {
		from := model.count()
		sid := newUUID(t)
		r := runCLI(t, repo, env, cli, "-p", "hello", "--session-id", sid)
		if r.err != nil {
			t.Fatalf("claude -p: %v\n%s%s", r.err, r.stdout, r.stderr)
		}
		starts := hookContexts(claudeTranscript(t, home, sid), "SessionStart")
		if countContaining(starts, storedTitle("claude-code")) != 1 {
			t.Errorf("the later session's bootstrap lacks the stored record: %q", starts)
		}
		if reqs, _ := model.since(from); !containsAny(reqs, storedTitle("claude-code")) {
			t.Error("the model never saw the stored record")
		}
	})

	// Issue 39: a session whose model edits a file and runs a command that
	// fails, then passes, leaves observations, and the next session's
	// start says where it left off.
	t.Run("CaptureShowsAtNextStart", func(t *testing.T) {
		check := filepath.Join(repo, "check.sh")
		if err := os.WriteFile(check, []byte("echo '--- FAIL: TestCheck'\nexit 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		sid := newUUID(t)
		r := runCLI(t, repo, env, cli, "-p", "Make check.sh pass. "+captureTrigger+" path="+check, "--session-id", sid,
			"--allowedTools", "Bash,Read,Edit")
		if r.err != nil || !strings.Contains(r.stdout, "Captured.") {
			t.Fatalf("claude -p: %v\n%s%s\nhook.log:\n%s", r.err, r.stdout, r.stderr, hookLogIn(cache))
		}
		if b, _ := os.ReadFile(check); !strings.Contains(string(b), "exit 0") {
			t.Fatalf("the scripted Edit did not run: check.sh is %q", b)
		}
		next := newUUID(t)
		r = runCLI(t, repo, env, cli, "-p", "hello", "--session-id", next)
		if r.err != nil {
			t.Fatalf("claude -p: %v\n%s%s", r.err, r.stdout, r.stderr)
		}
		obs := observationsIn(t, td, "github/acme/e2e")
		for _, title := range []string{"Edited check.sh", "`sh check.sh` failed, then passed"} {
			if obs[title] == nil {
				t.Errorf("no observation %q; have %v\nhook.log:\n%s", title, slices.Sorted(maps.Keys(obs)), hookLogIn(cache))
			}
		}
		starts := hookContexts(claudeTranscript(t, home, next), "SessionStart")
		if countContaining(starts, "Where we left off") != 1 || countContaining(starts, "touched: check.sh") != 1 {
			t.Errorf("the next session's start does not say where the last one left off: %q", starts)
		}
	})

	t.Run("SessionEndKilledAfterOneSecond", func(t *testing.T) {
		killed := newUUID(t)
		fenv := append(append([]string(nil), env...), "HEARTH_FAILPOINT=hook-end-after-spool")
		r := runCLI(t, repo, fenv, cli, "-p", "a short question", "--session-id", killed)
		if r.err != nil {
			t.Fatalf("claude -p: %v\n%s%s", r.err, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stderr, "SessionEnd hook") {
			t.Logf("claude's stderr: %s", r.stderr)
		}
		if pids := hookProcesses(bin); len(pids) > 0 {
			for _, pid := range pids {
				if p, err := os.FindProcess(pid); err == nil {
					p.Kill()
				}
			}
			t.Fatalf("Claude Code left the session-end hook running (pids %v)", pids)
		}
		if n := closesFor(t, td, killed); n != 0 {
			t.Fatalf("the killed hook's close arrived before the next run (%d)", n)
		}
		// The next session's hooks deliver it, once.
		next := newUUID(t)
		if r := runCLI(t, repo, env, cli, "-p", "next question", "--session-id", next); r.err != nil {
			t.Fatalf("claude -p: %v\n%s%s", r.err, r.stdout, r.stderr)
		}
		testwait.WaitFor(t, "both closes land", func() bool { return closesFor(t, td, killed) == 1 && closesFor(t, td, next) == 1 })
		testwait.WaitFor(t, "the spool is empty", func() bool { return len(spooledIn(cache)) == 0 })
		if n := closesFor(t, td, killed); n != 1 {
			t.Errorf("the killed session closed %d times, want once", n)
		}
	})

	t.Run("PluginFromMarketplace", func(t *testing.T) {
		phome := t.TempDir()
		pcache := t.TempDir()
		repoRoot, _ := filepath.Abs(filepath.Join("..", ".."))
		penv := []string{
			"HOME=" + phome, "PATH=" + filepath.Dir(bin) + ":" + os.Getenv("PATH"), "ANTHROPIC_BASE_URL=" + model.URL,
			"ANTHROPIC_API_KEY=sk-e2e-not-a-key", "ENABLE_TOOL_SEARCH=false", "DISABLE_AUTOUPDATER=1",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "HEARTH_URL=" + td.url, "HEARTH_TOKEN=" + td.tokens["claude-code"],
			"HEARTH_CACHE_DIR=" + pcache,
		}
		for _, args := range [][]string{
			{"plugin", "validate", repoRoot},
			{"plugin", "validate", filepath.Join(repoRoot, "cmd", "hearth", "plugins", "claude-code")},
			{"plugin", "marketplace", "add", repoRoot},
			{"plugin", "install", "hearth@hearth", "--scope", "user"},
		} {
			if r := runCLI(t, repo, penv, cli, args...); r.err != nil {
				t.Fatalf("claude %s: %v\n%s%s", strings.Join(args, " "), r.err, r.stdout, r.stderr)
			}
		}
		if r := runCLI(t, repo, penv, cli, "mcp", "list"); !strings.Contains(r.stdout, "plugin:hearth:hearth: "+td.url+"/mcp (HTTP) - ✔ Connected") {
			t.Errorf("claude mcp list with the plugin: %v\n%s%s", r.err, r.stdout, r.stderr)
		}
		sid := newUUID(t)
		if r := runCLI(t, repo, penv, cli, "-p", "How do we deploy billing?", "--session-id", sid); r.err != nil {
			t.Fatalf("claude -p: %v\n%s%s", r.err, r.stdout, r.stderr)
		}
		tr := claudeTranscript(t, phome, sid)
		if countContaining(hookContexts(tr, "SessionStart"), "Hearth memory for github/acme/e2e") != 1 ||
			countContaining(hookContexts(tr, "UserPromptSubmit"), deploy) != 1 {
			t.Errorf("the plugin's hooks did not inject: %q %q", hookContexts(tr, "SessionStart"), hookContexts(tr, "UserPromptSubmit"))
		}
		testwait.WaitFor(t, "the plugin session is closed", func() bool { return closesFor(t, td, sid) == 1 })
	})
}

// hookLogIn is the hook log in a cache dir: why a hook printed nothing.
func hookLogIn(cache string) string {
	b, _ := os.ReadFile(filepath.Join(cache, "hook.log"))
	return string(b)
}

// spooledIn lists the calls waiting in a cache dir's spool.
func spooledIn(cache string) []string {
	return spooled(&hookEnv{cache: cache})
}

// codexSessionID reads the session id `codex exec` prints.
func codexSessionID(t *testing.T, r cliRun) string {
	t.Helper()
	m := regexp.MustCompile(`session id: ([0-9a-f-]{36})`).FindStringSubmatch(r.stdout + r.stderr)
	if m == nil {
		t.Fatalf("no session id in codex output:\n%s%s", r.stdout, r.stderr)
	}
	return m[1]
}

// codexRollout reads the rollout (transcript) Codex wrote for a session.
func codexRollout(t *testing.T, codexHome, sessionID string) string {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(codexHome, "sessions", "*", "*", "*", "rollout-*-"+sessionID+".jsonl"))
	if len(matches) != 1 {
		t.Fatalf("rollout of %s: found %v", sessionID, matches)
	}
	b, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// developerTexts returns the developer messages of a rollout: where Codex
// puts hook context.
func developerTexts(rollout string) []string {
	var out []string
	for _, line := range strings.Split(rollout, "\n") {
		var l struct {
			Type    string `json:"type"`
			Payload struct {
				Type    string `json:"type"`
				Role    string `json:"role"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"payload"`
		}
		if json.Unmarshal([]byte(line), &l) != nil || l.Type != "response_item" || l.Payload.Role != "developer" {
			continue
		}
		for _, c := range l.Payload.Content {
			out = append(out, c.Text)
		}
	}
	return out
}

// TestE2E_Codex proves with the real Codex CLI what it can do offline: the
// registration `hearth connect codex --apply` writes is read and its MCP
// server serves the model's tool calls; session-start and recall contexts
// reach the rollout and the model (recall once per session, across a
// resume); a memory_store call lands in Hearth and a later session's
// bootstrap shows it; session end closes once, also when Codex kills the
// hook after its one-second default; and the plugin installs from the
// repository as a marketplace and runs its hooks.
func TestE2E_Codex(t *testing.T) {
	cli := os.Getenv("HEARTH_CODEX_CLI")
	if cli == "" {
		t.Skip("HEARTH_CODEX_CLI is not set: run make e2e")
	}
	bin := buildHearth(t)
	td := startDaemon(t, testOptions())
	deploy := store(t, td, "github/acme/e2e", "procedure", "Deploy procedure for billing", "Deploy billing with make deploy once the canary passes.")
	repo := e2eRepo(t)
	home := t.TempDir()
	codexHome := filepath.Join(home, ".codex")
	cache := t.TempDir()
	model := responsesServer(t, map[string]any{
		"namespace": "github/acme/e2e", "type": "decision", "title": storedTitle("codex"),
		"content": "Billing deploys wait for a green canary.",
	})
	// The provider must come before any table: write it first, then let
	// hearth connect merge its table and hooks in.
	provider := fmt.Sprintf("model = \"scripted\"\nmodel_provider = \"scripted\"\napproval_policy = \"never\"\n\n"+
		"[model_providers.scripted]\nname = \"scripted\"\nbase_url = %q\nwire_api = \"responses\"\n", model.URL+"/v1")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(provider), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"HOME=" + home, "CODEX_HOME=" + codexHome, "PATH=" + os.Getenv("PATH"),
		"HEARTH_TOKEN=" + td.tokens["codex"], "HEARTH_CACHE_DIR=" + cache,
	}
	connect := runCLI(t, repo, env, bin, "connect", "codex", "--apply", "--url", td.url)
	if connect.err != nil {
		t.Fatalf("hearth connect: %v\n%s%s", connect.err, connect.stdout, connect.stderr)
	}
	codexExec := func(t *testing.T, env []string, args ...string) cliRun {
		t.Helper()
		full := append([]string{"exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust"}, args...)
		r := runCLI(t, repo, env, cli, full...)
		if r.err != nil {
			t.Fatalf("codex %s: %v\n%s%s", strings.Join(full, " "), r.err, r.stdout, r.stderr)
		}
		return r
	}

	t.Run("MCPRegistered", func(t *testing.T) {
		r := runCLI(t, repo, env, cli, "mcp", "list")
		if !regexp.MustCompile(`hearth\s+` + regexp.QuoteMeta(td.url+"/mcp") + `\s+HEARTH_TOKEN\s+enabled`).MatchString(r.stdout) {
			t.Fatalf("codex mcp list: %v\n%s%s", r.err, r.stdout, r.stderr)
		}
	})

	var sid1 string
	t.Run("SessionStartRecallAndStore", func(t *testing.T) {
		from := model.count()
		r := codexExec(t, env, "How do we deploy billing? "+storeTrigger)
		sid1 = codexSessionID(t, r)
		dev := developerTexts(codexRollout(t, codexHome, sid1))
		if countContaining(dev, "Hearth memory for github/acme/e2e") != 1 || countContaining(dev, "Deploy procedure for billing ["+deploy+"]") != 2 {
			t.Errorf("developer messages in the rollout: %q", dev)
		}
		if countContaining(dev, "Hearth memory that may bear on this prompt") != 1 {
			t.Errorf("recall context in the rollout: %q\nhook.log:\n%s", dev, hookLogIn(cache))
		}
		reqs, _ := model.since(from)
		if !containsAny(reqs, "Hearth memory for github/acme/e2e") || !containsAny(reqs, "Hearth memory that may bear on this prompt") {
			t.Error("the model's requests lack the session-start or recall context")
		}
		if !rawContains(reqs, `"name":"mcp__hearth"`) {
			t.Error("Hearth's MCP tools never reached the model")
		}
		found := restTransport{td}.call(t, td.tokens["claude-code"], "memory_search", map[string]any{"namespace": "github/acme/e2e", "query": storedTitle("codex")})
		if str(found.body, "hits", 0, "title") != storedTitle("codex") {
			t.Fatalf("the record Codex stored is not in Hearth: %s", found.raw)
		}
		got := restTransport{td}.call(t, td.tokens["claude-code"], "memory_get", map[string]any{"ids": []string{str(found.body, "hits", 0, "id")}})
		if str(got.body, "records", 0, "writer") != "codex" {
			t.Errorf("writer = %q, want codex", str(got.body, "records", 0, "writer"))
		}
		testwait.WaitFor(t, "session 1 is closed", func() bool { return closesFor(t, td, sid1) == 1 })
	})

	t.Run("RecallNotTwiceInASession", func(t *testing.T) {
		if sid1 == "" {
			t.Skip("no first session")
		}
		codexExec(t, env, "resume", sid1, "How do we deploy billing again?")
		dev := developerTexts(codexRollout(t, codexHome, sid1))
		recalled := 0
		for _, d := range dev {
			if strings.Contains(d, "Hearth memory that may bear on this prompt") && strings.Contains(d, deploy) {
				recalled++
			}
		}
		if recalled != 1 {
			t.Errorf("the deploy record was recalled %d times in one session, want once: %q", recalled, dev)
		}
		if countContaining(dev, "Hearth memory for github/acme/e2e") < 2 {
			t.Errorf("resume did not inject the session-start context again: %q", dev)
		}
	})

	t.Run("LaterSessionBootstrapShowsStore", func(t *testing.T) {
		r := codexExec(t, env, "hello")
		dev := developerTexts(codexRollout(t, codexHome, codexSessionID(t, r)))
		if countContaining(dev, storedTitle("codex")) != 1 {
			t.Errorf("the later session's bootstrap lacks the stored record: %q", dev)
		}
	})

	// Issue 39: a Codex session whose scripted model runs a failing check,
	// fixes it with a shell edit, runs it again and runs another failing
	// check leaves observations; the next session's start says where it
	// left off.
	t.Run("CaptureShowsAtNextStart", func(t *testing.T) {
		for name, body := range map[string]string{"check.sh": "echo '--- FAIL: TestCheck'\nexit 1\n", "other.sh": "echo '--- FAIL: TestOther'\nexit 1\n"} {
			if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		r := codexExec(t, env, "--sandbox", "danger-full-access", "Make check.sh pass. "+captureTrigger)
		if !strings.Contains(r.stdout+r.stderr, "Captured.") {
			t.Fatalf("codex exec did not finish the script:\n%s%s\nhook.log:\n%s", r.stdout, r.stderr, hookLogIn(cache))
		}
		if b, _ := os.ReadFile(filepath.Join(repo, "check.sh")); !strings.Contains(string(b), "exit 0") {
			t.Fatalf("the scripted edit did not run: check.sh is %q", b)
		}
		next := codexExec(t, env, "hello")
		obs := observationsIn(t, td, "github/acme/e2e")
		for _, title := range []string{"`sh check.sh` failed, then passed", "`sh other.sh` fails: TestOther"} {
			if obs[title] == nil {
				t.Errorf("no observation %q; have %v\nhook.log:\n%s", title, slices.Sorted(maps.Keys(obs)), hookLogIn(cache))
			}
		}
		dev := developerTexts(codexRollout(t, codexHome, codexSessionID(t, next)))
		if countContaining(dev, "Where we left off") != 1 || countContaining(dev, "left failing: `sh other.sh`: TestOther") != 1 {
			t.Errorf("the next session's start does not say where the last one left off: %q", dev)
		}
	})

	t.Run("SessionEndKilledAfterOneSecond", func(t *testing.T) {
		fenv := append(append([]string(nil), env...), "HEARTH_FAILPOINT=hook-end-after-spool")
		r := codexExec(t, fenv, "a short question")
		killed := codexSessionID(t, r)
		if pids := hookProcesses(bin); len(pids) > 0 {
			for _, pid := range pids {
				if p, err := os.FindProcess(pid); err == nil {
					p.Kill()
				}
			}
			t.Fatalf("Codex left the session-end hook running (pids %v)", pids)
		}
		if n := closesFor(t, td, killed); n != 0 {
			t.Fatalf("the killed hook's close arrived before the next run (%d)", n)
		}
		next := codexSessionID(t, codexExec(t, env, "next question"))
		testwait.WaitFor(t, "both closes land", func() bool { return closesFor(t, td, killed) == 1 && closesFor(t, td, next) == 1 })
		testwait.WaitFor(t, "the spool is empty", func() bool { return len(spooledIn(cache)) == 0 })
		if n := closesFor(t, td, killed); n != 1 {
			t.Errorf("the killed session closed %d times, want once", n)
		}
	})

	t.Run("PluginFromMarketplace", func(t *testing.T) {
		phome := t.TempDir()
		pcodex := filepath.Join(phome, ".codex")
		os.MkdirAll(pcodex, 0o700)
		os.WriteFile(filepath.Join(pcodex, "config.toml"), []byte(provider), 0o600)
		repoRoot, _ := filepath.Abs(filepath.Join("..", ".."))
		penv := []string{
			"HOME=" + phome, "CODEX_HOME=" + pcodex, "PATH=" + filepath.Dir(bin) + ":" + os.Getenv("PATH"),
			"HEARTH_URL=" + td.url, "HEARTH_TOKEN=" + td.tokens["codex"], "HEARTH_CACHE_DIR=" + t.TempDir(),
		}
		for _, args := range [][]string{{"plugin", "marketplace", "add", repoRoot}, {"plugin", "add", "hearth@hearth"}} {
			if r := runCLI(t, repo, penv, cli, args...); r.err != nil {
				t.Fatalf("codex %s: %v\n%s%s", strings.Join(args, " "), r.err, r.stdout, r.stderr)
			}
		}
		r := codexExec(t, penv, "How do we deploy billing?")
		sid := codexSessionID(t, r)
		dev := developerTexts(codexRollout(t, pcodex, sid))
		if countContaining(dev, "Hearth memory for github/acme/e2e") != 1 || countContaining(dev, "Hearth memory that may bear on this prompt") != 1 {
			t.Errorf("the plugin's hooks did not inject: %q", dev)
		}
		testwait.WaitFor(t, "the plugin session is closed", func() bool { return closesFor(t, td, sid) == 1 })
	})
}
