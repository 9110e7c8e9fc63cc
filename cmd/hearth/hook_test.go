package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/cmd/hearth/internal/hook"
	"github.com/hearth-memory/hearth/storage"
)

// hookEnv is a checkout, a cache dir and a config for in-process hook runs
// against one daemon.
type hookEnv struct {
	td    *testDaemon
	repo  string // a checkout whose origin is github.com/acme/api
	cache string
	cfg   hook.Config
}

// newHookEnv makes a checkout with origin git@github.com:Acme/API.git and a
// hook config for harness h pointing at url (the daemon unless given).
func newHookEnv(t *testing.T, td *testDaemon, h hook.Harness, url string) *hookEnv {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "api")
	gitConfig := "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = git@github.com:Acme/API.git\n"
	for p, content := range map[string]string{
		filepath.Join(repo, ".git", "config"):           gitConfig,
		filepath.Join(repo, "internal", "billing", "x"): "package billing\n",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if url == "" {
		url = td.url
	}
	cache := t.TempDir()
	token := td.tokens[string(h)]
	// Prompt recall gets a minute, not hook.PromptDeadline: these tests
	// check what it finds, against a server the race detector slows ten
	// times; TestHook_FailOpen holds it to the shipped deadline.
	return &hookEnv{td: td, repo: repo, cache: cache, cfg: hook.Config{
		Harness: h, URL: url, Token: token, CacheDir: cache, Env: func(string) string { return "" },
		PromptDeadline: time.Minute,
	}}
}

// run runs one hook event in-process with stdin built from fields, and
// returns what it printed.
func (e *hookEnv) run(t *testing.T, event string, fields map[string]any) string {
	t.Helper()
	in := map[string]any{"session_id": "sess-1", "cwd": e.repo}
	for k, v := range fields {
		in[k] = v
	}
	b, _ := json.Marshal(in)
	cfg := e.cfg
	if cfg.Start.IsZero() {
		cfg.Start = time.Now()
	}
	var out bytes.Buffer
	hook.Run(context.Background(), cfg, event, bytes.NewReader(b), &out)
	return out.String()
}

// logText is the hook log, "" when nothing was logged.
func (e *hookEnv) logText() string {
	b, _ := os.ReadFile(filepath.Join(e.cache, "hook.log"))
	return string(b)
}

// store writes a record through REST and returns its id.
func store(t *testing.T, td *testDaemon, ns, typ, title, content string, anchors ...string) string {
	t.Helper()
	args := map[string]any{"namespace": ns, "type": typ, "title": title, "content": content}
	if len(anchors) > 0 {
		args["anchors"] = anchors
	}
	r := restTransport{td}.call(t, td.tokens["claude-code"], "memory_store", args)
	if !r.ok {
		t.Fatalf("store: %v", r)
	}
	return str(r.body, "record", "id")
}

// contextOf returns the context a hook's output gives the model: Claude
// Code's additionalContext (checking the JSON shape), Codex's plain text.
func contextOf(t *testing.T, h hook.Harness, event, out string) string {
	t.Helper()
	if out == "" || h == hook.Codex {
		if strings.HasPrefix(strings.TrimSpace(out), "{") {
			t.Fatalf("codex output looks like JSON: %s", out)
		}
		return out
	}
	var v struct {
		HookSpecificOutput map[string]string `json:"hookSpecificOutput"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil || v.HookSpecificOutput["hookEventName"] != event || len(v.HookSpecificOutput) != 2 {
		t.Fatalf("claude-code output is not hookSpecificOutput for %s: %s (%v)", event, out, err)
	}
	return v.HookSpecificOutput["additionalContext"]
}

// closes returns the ops of the session-close audit rows.
func closes(t *testing.T, td *testDaemon) []string {
	t.Helper()
	rows, err := td.db.AuditLog(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, r := range rows {
		if r.Action == storage.ActionSessionClose {
			f := strings.Fields(r.Detail.String())
			if len(f) >= 2 && f[0] == "op" {
				ops = append(ops, strings.TrimSuffix(f[1], ";"))
			}
		}
	}
	return ops
}

// TestHook_SessionStart injects the repository's bootstrap in each
// harness's shape (R-B1, R-B6 through the hook), also on compact and
// resume, and reports the records' path anchors as the checkout has them.
func TestHook_SessionStart(t *testing.T) {
	// Not parallel: the hook's client keeps its shipped dial and send
	// timeouts, which a daemon slowed by tests running beside it misses.
	td := startDaemon(t, testOptions())
	a := store(t, td, "github/acme/api", "constraint", "Never log tokens", "Tokens never reach a log line.", "path:internal/billing/x")
	b := store(t, td, "github/acme/api", "decision", "Queue on SQLite", "The job queue lives in SQLite.", "path:gone/file.go")
	other := store(t, td, "github/acme/web", "decision", "Web only", "Not for the api.")
	for _, h := range []hook.Harness{hook.ClaudeCode, hook.Codex} {
		t.Run(string(h), func(t *testing.T) {
			e := newHookEnv(t, td, h, "")
			for _, source := range []string{"startup", "resume", "compact"} {
				ctx := contextOf(t, h, hook.EventSessionStart, e.run(t, "session-start", map[string]any{"source": source}))
				for _, want := range []string{"Hearth memory for github/acme/api", "constraint: Never log tokens [" + a + "]", "decision: Queue on SQLite [" + b + "]"} {
					if !strings.Contains(ctx, want) {
						t.Errorf("%s: context lacks %q:\n%s", source, want, ctx)
					}
				}
				if strings.Contains(ctx, other) {
					t.Errorf("%s: context shows another repository's record", source)
				}
			}
			if l := e.logText(); l != "" {
				t.Errorf("a successful session start logged:\n%s", l)
			}
			// The server has memory_anchor_report: the hook resolved both
			// path anchors against the checkout and reported them.
			if _, err := os.Stat(filepath.Join(e.cache, "anchor-report-missing")); err == nil {
				t.Error("the hook took memory_anchor_report for missing")
			}
			r := restTransport{td}.call(t, td.tokens["claude-code"], "memory_get", map[string]any{"ids": []string{a, b}})
			for i, want := range []string{"available", "unavailable"} {
				if got := str(r.body, "records", i, "anchors", 0, "state"); got != want {
					t.Errorf("record %d's path anchor is %q after session start, want %q: %s", i, got, want, r.raw)
				}
			}
		})
	}
	t.Run("OKNoRepository", func(t *testing.T) {
		store(t, td, "global", "preference", "Answer tersely", "Short answers.")
		e := newHookEnv(t, td, hook.Codex, "")
		ctx := e.run(t, "session-start", map[string]any{"cwd": t.TempDir()})
		if !strings.Contains(ctx, "Hearth memory for global") || !strings.Contains(ctx, "Answer tersely") {
			t.Errorf("context = %q, want the global bootstrap", ctx)
		}
	})
}

// countingProxy is a reverse proxy in front of a real daemon that counts
// calls per path and can hold calls to paths under holdOn for a while.
type countingProxy struct {
	*httptest.Server
	mu     sync.Mutex
	calls  map[string]int
	holdOn string
	hold   time.Duration
}

func newCountingProxy(t *testing.T, target string) *countingProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{calls: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0) // a held call the client gave up on
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.calls[r.URL.Path]++
		hold := time.Duration(0)
		if p.holdOn != "" && strings.HasPrefix(r.URL.Path, p.holdOn) {
			hold = p.hold
		}
		p.mu.Unlock()
		if hold > 0 {
			select {
			case <-time.After(hold):
			case <-r.Context().Done():
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *countingProxy) count(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[path]
}

// TestHook_Prompt: recall injects a matching record once per session,
// nothing when nothing matches, and never sends a prompt that screens as a
// secret (R-K4, R-S5 through the hook).
func TestHook_Prompt(t *testing.T) {
	// Not parallel: the hook's client keeps its shipped dial and send
	// timeouts, which a daemon slowed by tests running beside it misses.
	td := startDaemon(t, testOptions())
	retry := store(t, td, "github/acme/api", "decision", "Retry policy for billing", "Retry idempotent billing calls three times with backoff.")
	logs := store(t, td, "github/acme/api", "decision", "Structured logging", "Logs are JSON lines with request ids.")
	for _, h := range []hook.Harness{hook.ClaudeCode, hook.Codex} {
		t.Run(string(h), func(t *testing.T) {
			e := newHookEnv(t, td, h, "")
			first := contextOf(t, h, hook.EventPrompt, e.run(t, "prompt", map[string]any{"prompt": "how do we retry billing calls?"}))
			if !strings.Contains(first, "Retry policy for billing ["+retry+"]") || strings.Contains(first, logs) {
				t.Errorf("first recall = %q, want the retry record only", first)
			}
			if again := e.run(t, "prompt", map[string]any{"prompt": "how do we retry billing calls?"}); again != "" {
				t.Errorf("second recall of the same record printed %q, want nothing", again)
			}
			other := e.run(t, "prompt", map[string]any{"prompt": "what format do the logs use?"})
			if c := contextOf(t, h, hook.EventPrompt, other); !strings.Contains(c, logs) || strings.Contains(c, retry) {
				t.Errorf("recall for logs = %q, want the logging record only", c)
			}
			if none := e.run(t, "prompt", map[string]any{"prompt": "zebra giraffe quantum"}); none != "" {
				t.Errorf("a prompt matching nothing printed %q", none)
			}
			// Another session sees the record again.
			if c := e.run(t, "prompt", map[string]any{"session_id": "sess-2", "prompt": "retry billing"}); !strings.Contains(c, retry) {
				t.Errorf("another session's recall = %q, want the retry record", c)
			}
			// After compaction what was shown may be gone: it can be shown again.
			e.run(t, "session-start", map[string]any{"source": "compact"})
			if c := e.run(t, "prompt", map[string]any{"prompt": "how do we retry billing calls?"}); !strings.Contains(c, retry) {
				t.Errorf("recall after compact = %q, want the retry record again", c)
			}
			if l := e.logText(); l != "" {
				t.Errorf("recall logged:\n%s", l)
			}
		})
	}
	t.Run("ErrSecretNotSent", func(t *testing.T) {
		proxy := newCountingProxy(t, td.url)
		e := newHookEnv(t, td, hook.ClaudeCode, proxy.URL)
		secret := "why does ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5 fail for billing retry?"
		if out := e.run(t, "prompt", map[string]any{"prompt": secret}); out != "" {
			t.Errorf("a secret prompt printed %q", out)
		}
		if n := proxy.count("/api/memory_search"); n != 0 {
			t.Errorf("a secret prompt was sent %d times", n)
		}
		if l := e.logText(); !strings.Contains(l, "screens as a secret (github-token)") || strings.Contains(l, "ghp_") {
			t.Errorf("log = %q, want the pattern name and not the secret", l)
		}
	})
	t.Run("OKSlashCommandNotSent", func(t *testing.T) {
		proxy := newCountingProxy(t, td.url)
		e := newHookEnv(t, td, hook.Codex, proxy.URL)
		if out := e.run(t, "prompt", map[string]any{"prompt": "/compact retry billing"}); out != "" || proxy.count("/api/memory_search") != 0 {
			t.Errorf("a harness command was searched: %q", out)
		}
	})
}

// TestHook_SessionEnd closes the session exactly once with a summary and
// notes from the transcript tail (R-Z1, R-Z2 through the hook).
func TestHook_SessionEnd(t *testing.T) {
	// Not parallel: the hook's client keeps its shipped dial and send
	// timeouts, which a daemon slowed by tests running beside it misses.
	td := startDaemon(t, testOptions())
	transcript := filepath.Join("internal", "hook", "testdata", "transcript", "claude-code.jsonl")
	t.Run("OK", func(t *testing.T) {
		e := newHookEnv(t, td, hook.ClaudeCode, "")
		before := len(closes(t, td))
		for i := 0; i < 2; i++ {
			if out := e.run(t, "session-end", map[string]any{"session_id": "end-1", "transcript_path": transcript, "reason": "other"}); out != "" {
				t.Errorf("session-end printed %q", out)
			}
		}
		ops := closes(t, td)
		if len(ops) != before+1 {
			t.Fatalf("%d closes, want exactly one more than %d", len(ops), before)
		}
		rc, err := td.db.Receipt(context.Background(), ops[0])
		if err != nil {
			t.Fatal(err)
		}
		if rc.SessionID != "end-1" || rc.Namespace != "github/acme/api" || !rc.SummaryKept || rc.NotesRefused {
			t.Errorf("receipt = %+v, want session end-1 in github/acme/api with the summary kept", rc)
		}
		if entries, _ := os.ReadDir(filepath.Join(e.cache, "spool")); len(entries) != 1 || entries[0].Name() != ".lock" {
			t.Errorf("spool after delivery holds %v, want only the lock", entries)
		}
	})
	t.Run("OKNoTranscript", func(t *testing.T) {
		e := newHookEnv(t, td, hook.Codex, "")
		before := len(closes(t, td))
		e.run(t, "session-end", map[string]any{"session_id": "end-2", "transcript_path": nil})
		ops := closes(t, td)
		if len(ops) != before+1 {
			t.Fatalf("%d closes, want one more", len(ops))
		}
		if rc, _ := td.db.Receipt(context.Background(), ops[0]); rc == nil || rc.SummaryKept || rc.SessionID != "end-2" {
			t.Errorf("receipt = %+v, want end-2 without a summary", rc)
		}
	})
	t.Run("OKEmptySessionNotClosed", func(t *testing.T) {
		e := newHookEnv(t, td, hook.ClaudeCode, "")
		empty := filepath.Join(t.TempDir(), "t.jsonl")
		os.WriteFile(empty, []byte(`{"type":"queue-operation"}`+"\n"), 0o600)
		before := len(closes(t, td))
		e.run(t, "session-end", map[string]any{"session_id": "end-3", "transcript_path": empty})
		if n := len(closes(t, td)); n != before {
			t.Errorf("a session without a prompt was closed")
		}
		e.run(t, "session-end", map[string]any{"session_id": "end-3b", "transcript_path": filepath.Join(t.TempDir(), "never-written.jsonl")})
		if n := len(closes(t, td)); n != before {
			t.Errorf("a session whose transcript was never written was closed")
		}
	})
	t.Run("OKSecretSummaryLeftOut", func(t *testing.T) {
		e := newHookEnv(t, td, hook.ClaudeCode, "")
		p := filepath.Join(t.TempDir(), "t.jsonl")
		lines := `{"type":"user","message":{"role":"user","content":"set up deploys"}}` + "\n" +
			`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Done; the token is ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5."}]}}` + "\n"
		os.WriteFile(p, []byte(lines), 0o600)
		before := len(closes(t, td))
		e.run(t, "session-end", map[string]any{"session_id": "end-4", "transcript_path": p})
		ops := closes(t, td)
		if len(ops) != before+1 {
			t.Fatalf("the close was lost to a secret in the transcript")
		}
		if rc, _ := td.db.Receipt(context.Background(), ops[0]); rc == nil || rc.SummaryKept {
			t.Errorf("receipt = %+v, want the summary left out", rc)
		}
		if l := e.logText(); strings.Contains(l, "ghp_") || !strings.Contains(l, "github-token") {
			t.Errorf("log = %q", l)
		}
	})
}

// TestHook_Spool drains spooled closes exactly once: kept while the server
// is down, delivered when it is up, dropped when it refuses them for good.
func TestHook_Spool(t *testing.T) {
	// Not parallel: the hook's client keeps its shipped dial and send
	// timeouts, which a daemon slowed by tests running beside it misses.
	td := startDaemon(t, testOptions())
	ctx := context.Background()
	down := "http://" + closedAddr(t)
	t.Run("OK", func(t *testing.T) {
		e := newHookEnv(t, td, hook.ClaudeCode, down)
		// The server is down: the hook spools and cannot deliver.
		e.run(t, "session-end", map[string]any{"session_id": "spool-1"})
		sp := &hook.Spool{Dir: filepath.Join(e.cache, "spool"), Now: time.Now}
		if !sp.Due(time.Now().Add(time.Hour), time.Minute) {
			t.Fatal("nothing spooled while the server was down")
		}
		var logged []string
		logf := func(f string, a ...any) { logged = append(logged, f) }
		res, err := sp.Drain(ctx, hook.NewClient(down, td.tokens["claude-code"]), logf)
		if err != nil || res.Kept != 1 || res.Delivered != 0 {
			t.Fatalf("drain while down = %+v, %v; want kept", res, err)
		}
		before := len(closes(t, td))
		res, err = sp.Drain(ctx, hook.NewClient(td.url, td.tokens["claude-code"]), logf)
		if err != nil || res.Delivered != 1 {
			t.Fatalf("drain while up = %+v, %v; want delivered", res, err)
		}
		res, _ = sp.Drain(ctx, hook.NewClient(td.url, td.tokens["claude-code"]), logf)
		if res != (hook.DrainResult{}) {
			t.Errorf("a third drain did %+v, want nothing", res)
		}
		if n := len(closes(t, td)); n != before+1 {
			t.Errorf("%d closes, want exactly one more", n-before)
		}
	})
	t.Run("OKDroppedWhenRefused", func(t *testing.T) {
		e := newHookEnv(t, td, hook.Codex, down)
		e.run(t, "session-end", map[string]any{"session_id": "spool-2"})
		sp := &hook.Spool{Dir: filepath.Join(e.cache, "spool"), Now: time.Now}
		// Delivered as another client, the op_id is refused (409) for good.
		var logged []string
		res, err := sp.Drain(ctx, hook.NewClient(td.url, td.tokens["codex"]), func(f string, a ...any) { logged = append(logged, f) })
		if err != nil || res.Delivered != 1 {
			t.Fatalf("first delivery = %+v, %v", res, err)
		}
		e.run(t, "session-end", map[string]any{"session_id": "spool-2"})
		res, err = sp.Drain(ctx, hook.NewClient(td.url, td.tokens["claude-code"]), func(f string, a ...any) { logged = append(logged, f) })
		if err != nil || res.Dropped != 1 || !strings.Contains(strings.Join(logged, "\n"), "dropped") {
			t.Errorf("replay by another client = %+v, %v, log %q; want dropped", res, err, logged)
		}
	})
}

// closedAddr is a loopback address where nothing listens.
func closedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestHook_FailOpen: whatever the server does (down, too slow, refusing the
// token, answering garbage), every hook prints nothing, returns, and logs
// the cause without the token.
func TestHook_FailOpen(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, testOptions())
	store(t, td, "github/acme/api", "decision", "Retry policy for billing", "Retry billing calls three times.")
	slow := newCountingProxy(t, td.url)
	slow.holdOn, slow.hold = "/api/", 3*time.Second
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `<html>{"hits": [ garbage`)
	}))
	t.Cleanup(garbage.Close)
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream exploded", http.StatusBadGateway)
	}))
	t.Cleanup(broken.Close)
	for _, tc := range []struct {
		name, url, token string
		wantLog          string
	}{
		{"Down", "http://" + closedAddr(t), "", "connection refused"},
		{"Slow", slow.URL, "", "deadline exceeded"},
		{"Unauthorized", td.url, "hearth_not-a-real-token-0123456789", "UNAUTHENTICATED"},
		{"Garbage", garbage.URL, "", "not the expected JSON"},
		{"BadGateway", broken.URL, "", "HTTP 502"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newHookEnv(t, td, hook.ClaudeCode, tc.url)
			e.cfg.PromptDeadline = hook.PromptDeadline // Slow must outlast it
			if tc.token != "" {
				e.cfg.Token = tc.token
			}
			for _, ev := range []struct {
				event  string
				fields map[string]any
			}{
				{"session-start", map[string]any{"source": "startup"}},
				{"prompt", map[string]any{"prompt": "how do we retry billing calls?"}},
				{"session-end", map[string]any{}},
			} {
				if out := e.run(t, ev.event, ev.fields); out != "" {
					t.Errorf("%s printed %q", ev.event, out)
				}
			}
			l := e.logText()
			for _, ev := range []string{"session-start", "prompt", "session-end"} {
				if !regexp.MustCompile(ev + `\[\d+\]: .*` + regexp.QuoteMeta(tc.wantLog)).MatchString(l) {
					t.Errorf("log lacks %q for %s:\n%s", tc.wantLog, ev, l)
				}
			}
			for _, tok := range []string{e.cfg.Token, td.tokens["claude-code"]} {
				if tok != "" && strings.Contains(l, tok) {
					t.Errorf("the log holds the token")
				}
			}
			if fi, err := os.Stat(filepath.Join(e.cache, "hook.log")); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("hook.log: %v %v, want mode 0600", fi, err)
			}
		})
	}
	t.Run("BadInput", func(t *testing.T) {
		e := newHookEnv(t, td, hook.Codex, "")
		var out bytes.Buffer
		hook.Run(context.Background(), e.cfg, "prompt", strings.NewReader("not json"), &out)
		if out.Len() != 0 || !strings.Contains(e.logText(), "not a JSON object") {
			t.Errorf("bad stdin: out %q, log %q", out.String(), e.logText())
		}
	})
}

// TestRunHook_CLI: the subcommand exits 0 on every hook failure, honours
// HEARTH_HOOKS=off, and mcp-headers prints the header from a token file.
func TestRunHook_CLI(t *testing.T) {
	// Not parallel: it sets the process environment (t.Setenv), which every test shares.
	td := startDaemon(t, testOptions())
	store(t, td, "github/acme/api", "decision", "Retry policy for billing", "Retry billing calls three times.")
	e := newHookEnv(t, td, hook.Codex, "")
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte(td.tokens["codex"]+"\n"), 0o600)
	t.Setenv("HEARTH_CACHE_DIR", e.cache)
	t.Setenv("HEARTH_TOKEN", "")
	t.Setenv("HEARTH_TOKEN_FILE", "")
	t.Setenv("HEARTH_URL", "")
	stdin := `{"session_id":"cli-1","cwd":"` + e.repo + `","prompt":"retry billing"}`
	call := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := runHook(context.Background(), args, strings.NewReader(stdin), &out, &errb, time.Now())
		return code, out.String(), errb.String()
	}
	t.Run("OK", func(t *testing.T) {
		code, out, _ := call("prompt", "--harness", "codex", "--url", td.url+"/mcp/", "--token-file", tokenFile)
		if code != 0 || !strings.Contains(out, "Retry policy for billing") {
			t.Errorf("exit %d, out %q; want the recall", code, out)
		}
	})
	t.Run("OKOff", func(t *testing.T) {
		t.Setenv("HEARTH_HOOKS", "off")
		if code, out, _ := call("prompt", "--harness", "codex", "--url", td.url, "--token-file", tokenFile); code != 0 || out != "" {
			t.Errorf("HEARTH_HOOKS=off: exit %d, out %q", code, out)
		}
	})
	t.Run("ErrArgs", func(t *testing.T) {
		for _, args := range [][]string{{"prompt", "--harness", "vim"}, {"prompt", "--bogus"}, {"teleport", "--harness", "codex"}} {
			if code, out, _ := call(args...); code != 0 || out != "" {
				t.Errorf("%v: exit %d, out %q; want 0 and nothing", args, code, out)
			}
		}
	})
	t.Run("OKMCPHeaders", func(t *testing.T) {
		code, out, _ := call("mcp-headers", "--token-file", tokenFile)
		if code != 0 || out != `{"Authorization":"Bearer `+td.tokens["codex"]+`"}`+"\n" {
			t.Errorf("mcp-headers: exit %d, out %q", code, out)
		}
		if code, out, errs := call("mcp-headers", "--token-file", filepath.Join(t.TempDir(), "none")); code == 0 || out != "" || errs == "" {
			t.Errorf("mcp-headers without a token: exit %d, out %q, err %q", code, out, errs)
		}
	})
}

// TestRunConnect_CLI: `hearth connect` prints with this binary's path and
// the given URL, refuses what it cannot connect, and --apply writes the
// settings under HOME.
func TestRunConnect_CLI(t *testing.T) {
	// Not parallel: it sets the process environment (t.Setenv), which every test shares.
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("CODEX_HOME", "")
	t.Setenv("HEARTH_URL", "")
	var out, errb bytes.Buffer
	if code := runConnect([]string{"codex", "--url", "http://hearth.lan:8765/"}, &out, &errb); code != 0 {
		t.Fatalf("connect codex: exit %d: %s", code, errb.String())
	}
	exe, _ := os.Executable()
	if !strings.Contains(out.String(), `url = "http://hearth.lan:8765/mcp"`) || !strings.Contains(out.String(), filepath.Base(exe)+" hook prompt --harness codex --url http://hearth.lan:8765") {
		t.Errorf("printed:\n%s", out.String())
	}
	for _, args := range [][]string{{"vim"}, {"codex", "--url", "ftp://x"}, {"codex", "--url", "http://ann:pw@x"}, {"codex", "--token-file", filepath.Join(home, "none")}} {
		out.Reset()
		errb.Reset()
		if code := runConnect(args, &out, &errb); code == 0 || strings.Contains(errb.String(), "pw") {
			t.Errorf("%v: exit %d, stderr %q; want refused without echoing a password", args, code, errb.String())
		}
	}
	out.Reset()
	if code := runConnect([]string{"claude-code", "--apply"}, &out, &errb); code != 0 {
		t.Fatalf("connect --apply: exit %d: %s", code, errb.String())
	}
	for _, f := range []string{filepath.Join(home, ".claude.json"), filepath.Join(home, ".claude", "settings.json")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("--apply did not write %s", f)
		}
	}
	if !regexp.MustCompile(`wrote .*settings\.json`).MatchString(out.String()) {
		t.Errorf("--apply said:\n%s", out.String())
	}
}

// TestHook_AnchorReport: session start reports the path anchors whose state
// changed, of the records it showed from the repository's own namespace.
// memory_anchor_report does not exist on the server yet (issue 17): a proxy
// in front of the real daemon answers that one route with the contract of
// docs/design.md §18b (id, anchor, state → record) and records the calls; every other
// call reaches the daemon.
func TestHook_AnchorReport(t *testing.T) {
	// Not parallel: the hook's client keeps its shipped dial and send
	// timeouts, which a daemon slowed by tests running beside it misses.
	td := startDaemon(t, testOptions())
	present := store(t, td, "github/acme/api", "constraint", "Billing client", "See the billing code.", "path:internal/billing/x", "url:https://example.com/doc")
	missing := store(t, td, "github/acme/api", "decision", "Old queue", "The old queue file.", "path:internal/queue/old.go")
	store(t, td, "global", "preference", "Global paths", "Not this checkout's.", "path:internal/elsewhere.go")
	u, _ := url.Parse(td.url)
	daemon := httputil.NewSingleHostReverseProxy(u)
	var mu sync.Mutex
	var reports []map[string]any
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/memory_anchor_report" {
			daemon.ServeHTTP(w, r)
			return
		}
		var args map[string]any
		json.NewDecoder(r.Body).Decode(&args)
		mu.Lock()
		reports = append(reports, args)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"record": map[string]any{"id": args["id"]}})
	}))
	t.Cleanup(proxy.Close)
	e := newHookEnv(t, td, hook.Codex, proxy.URL)
	if out := e.run(t, "session-start", map[string]any{"source": "startup"}); !strings.Contains(out, present) {
		t.Fatalf("session start printed %q", out)
	}
	mu.Lock()
	got := reports
	mu.Unlock()
	want := map[string]string{present: "available", missing: "unavailable"}
	if len(got) != len(want) {
		t.Fatalf("reports = %v, want one per changed path anchor of the repository's records", got)
	}
	for _, r := range got {
		id, _ := r["id"].(string)
		if r["state"] != want[id] || !strings.HasPrefix(r["anchor"].(string), "path:") {
			t.Errorf("report %v, want %s %s", r, id, want[id])
		}
	}
	if _, err := os.Stat(filepath.Join(e.cache, "anchor-report-missing")); err == nil {
		t.Error("a server with the route was remembered as one without")
	}
	if l := e.logText(); l != "" {
		t.Errorf("log:\n%s", l)
	}
}

// TestHook_NoHandoffRoute: session start asks no memory_handoff, a route
// the server never had (every call was a 404): where the last session
// left off comes in the bootstrap, from captured observations
// (docs/capture.md; issue 42). A proxy in front of the real daemon records
// every route asked.
func TestHook_NoHandoffRoute(t *testing.T) {
	// Not parallel: the hook's client keeps its shipped dial and send
	// timeouts, which a daemon slowed by tests running beside it misses.
	td := startDaemon(t, testOptions())
	store(t, td, "github/acme/api", "decision", "Queue on SQLite", "The job queue lives in SQLite.")
	u, _ := url.Parse(td.url)
	daemon := httputil.NewSingleHostReverseProxy(u)
	var mu sync.Mutex
	var asked []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path)
		mu.Unlock()
		daemon.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	e := newHookEnv(t, td, hook.ClaudeCode, proxy.URL)
	if got := contextOf(t, hook.ClaudeCode, hook.EventSessionStart, e.run(t, "session-start", map[string]any{"source": "startup"})); !strings.Contains(got, "Queue on SQLite") {
		t.Errorf("session start = %q, want the bootstrap", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if slices.Contains(asked, "/api/memory_handoff") || !slices.Contains(asked, "/api/memory_bootstrap") {
		t.Errorf("session start asked %v: want memory_bootstrap and no memory_handoff", asked)
	}
}
