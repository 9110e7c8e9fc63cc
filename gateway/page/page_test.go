package page

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/gateway/gatewaytest"
	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// These tests drive the page against gatewaytest's stand-in backend, to put
// the services into states a fresh daemon cannot be in (an RPC missing or
// failing, 500 audit rows, unused records ready). The whole daemon, with
// real storage, is tested in cmd/hearth (page_test.go).

var testNow = time.Date(2026, 11, 30, 14, 20, 0, 0, time.UTC)

type answers struct {
	status *hearthv1.StatusResponse
	audit  *hearthv1.AuditResponse
	unused *hearthv1.UnusedResponse
	errs   map[string]error // by method name, e.g. "Status"
}

func (a *answers) respond(method string, _ proto.Message) (proto.Message, error) {
	name := method[strings.LastIndex(method, "/")+1:]
	if err := a.errs[name]; err != nil {
		return nil, err
	}
	switch name {
	case "Status":
		return a.status, nil
	case "Audit":
		return a.audit, nil
	case "Unused":
		return a.unused, nil
	}
	return nil, status.Error(codes.Unimplemented, "not in this test")
}

func baseAnswers() *answers {
	return &answers{
		status: &hearthv1.StatusResponse{
			Version: "9.8.7", Records: 7,
			Counts: []*hearthv1.TypeStatusCount{
				{Type: "decision", Status: "active", Count: 5},
				{Type: "note", Status: "candidate", Count: 2},
				{Type: "note", Status: "deleted", Count: 1},
			},
			Namespaces: []*hearthv1.NamespaceCount{{Namespace: "github/acme/api", Records: 5}, {Namespace: "global", Records: 2}},
		},
		audit: &hearthv1.AuditResponse{Entries: []*hearthv1.AuditEntry{
			{At: timestamppb.New(testNow.Add(-time.Hour)), Client: "codex", Action: "store", Namespace: "global", RecordId: "01JD3M5ZK9Q8W7E6R5T4Y3X2V1", Detail: "<b>bold</b>"},
			{At: timestamppb.New(testNow.Add(-10 * time.Hour)), Client: "hearth", Action: "maintenance", Detail: "reviewed 3 candidates, forgot 1"},
		}},
		unused: &hearthv1.UnusedResponse{CountingSince: timestamppb.New(testNow.Add(-48 * time.Hour))},
		errs:   map[string]error{},
	}
}

type rendered struct {
	code int
	hdr  http.Header
	html string
}

// render serves the page to the Supervisor's ingress proxy, as the Home
// Assistant admin sees it; renderFrom serves it to another peer.
func render(t *testing.T, a *answers, cfg Config) (rendered, *gatewaytest.Backend) {
	t.Helper()
	return renderFrom(t, a, cfg, IngressProxy.String()+":50000")
}

func renderFrom(t *testing.T, a *answers, cfg Config, remote string) (rendered, *gatewaytest.Backend) {
	t.Helper()
	b := gatewaytest.New(t, a.respond)
	cfg.Conn, cfg.Token = b.Conn, "hearth_pagetoken"
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return testNow }
	}
	if !cfg.API.IsValid() {
		cfg.API = netip.MustParseAddrPort("127.0.0.1:8765")
	}
	r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8099/", nil)
	r.RemoteAddr = remote
	w := httptest.NewRecorder()
	Guard(IngressAllowed, New(cfg)).ServeHTTP(w, r)
	body, _ := io.ReadAll(w.Result().Body)
	return rendered{code: w.Code, hdr: w.Header(), html: string(body)}, b
}

func wantContains(t *testing.T, html string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(html, s) {
			t.Errorf("page lacks %q", s)
		}
	}
}

// attrURL finds every attribute that can make a browser fetch something.
var attrURL = regexp.MustCompile(`(?i)\s(src|href|action|formaction|srcset|poster|background|xlink:href|data|ping)\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)`)

// pageLink is every link the page may carry: itself, the browser's views
// (records with a query, record?id=<id>) and the data: icon. All relative,
// never with a leading '/' or a scheme.
var pageLink = regexp.MustCompile(`^(\./|data:,|records(\?[A-Za-z0-9_.~%&;=+-]*)?|record\?id=[0-9A-HJKMNP-TV-Z]{26})$`)

// formTag finds every form tag.
var formTag = regexp.MustCompile(`(?i)<form\b[^>]*>`)

// checkSelfContained fails unless html can render with no request but the
// page's own relative links: no script, frame or CSS url(), and no form but
// GET forms to records.
func checkSelfContained(t *testing.T, html string) {
	t.Helper()
	for _, m := range attrURL.FindAllStringSubmatch(html, -1) {
		v := strings.Trim(m[2], `"'`)
		switch {
		case m[1] == "href" && pageLink.MatchString(v):
		case m[1] == "action" && v == "records":
		default:
			t.Errorf("attribute %s=%q: only the page's relative links are expected", m[1], v)
		}
	}
	for _, f := range formTag.FindAllString(html, -1) {
		if !strings.Contains(f, `method="get"`) || !strings.Contains(f, `action="records"`) {
			t.Errorf("form %s: only GET forms to records are expected", f)
		}
	}
	lower := strings.ToLower(html)
	for _, bad := range []string{"<script", "<iframe", "<object", "<embed", "<base", "url(", "@import", "<img", "<link rel=\"stylesheet\"", "method=\"post\"", "javascript:"} {
		if strings.Contains(lower, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
}

func TestHandler_OK(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "claude-code"), []byte("hearth_abcDEF123-_x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		TokensDir: dir,
		Clients: []Client{
			{Name: "claude-code", Scopes: []string{"read", "write", "delete"}},
			{Name: "codex", Scopes: []string{"read", "write"}}, // its token file is missing
			{Name: "laptop", Scopes: []string{"read", "admin"}, Supplied: true},
			{Name: "kitchen", Scopes: []string{"read", "write"}, IP: netip.MustParseAddr("192.168.1.20")},
		},
		ReviewAt: "03:00", AnchorSweepHours: 6,
	}
	a := baseAnswers()
	a.status.ModelsConfigured = true
	a.status.ModelServers = []*hearthv1.ModelServer{
		{Url: "http://10.0.0.5:11434", Format: "ollama", Tier: "primary", Live: true, Probed: true,
			LastProbe: timestamppb.New(testNow.Add(-10 * time.Second)), Models: []string{"qwen3.5:9b"}, CallsInFlight: 1, Calls: 40,
			Failures: []*hearthv1.ModelFailures{{Model: "qwen3.5:9b", Count: 3}}},
		{Url: "http://10.0.0.6:8080/v1", Format: "openai", Tier: "direct", Live: false, Probed: true,
			LastProbe: timestamppb.New(testNow.Add(-5 * time.Second)), ProbeError: "no answer: connection refused"},
	}
	a.status.ModelChains = []*hearthv1.ModelChain{{Kind: "extraction", Models: []string{"qwen3.5:9b", "qwen3:4b"}}}
	a.status.Jobs = []*hearthv1.JobCount{{Kind: "extraction", State: "queued", Count: 2}, {Kind: "extraction", State: "done", Count: 9}}
	r, b := render(t, a, cfg)
	if r.code != http.StatusOK {
		t.Fatalf("status %d: %s", r.code, r.html)
	}
	t.Run("Headers", func(t *testing.T) {
		for k, want := range map[string]string{
			"Content-Type":  "text/html; charset=utf-8",
			"Cache-Control": "no-store",
		} {
			if got := r.hdr.Get(k); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
		if csp := r.hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("Content-Security-Policy = %q", csp)
		}
	})
	t.Run("AsThePageClient", func(t *testing.T) {
		calls := b.Calls()
		if len(calls) != 4 {
			t.Fatalf("%d calls, want Status, Audit, Unused and Questions", len(calls))
		}
		for _, c := range calls {
			if got := c.Metadata.Get("authorization"); len(got) != 1 || got[0] != "Bearer hearth_pagetoken" {
				t.Errorf("%s: authorization %q", c.Method, got)
			}
		}
		if a := calls[1].Request.(*hearthv1.AuditRequest); a.GetLimit() != auditLimit {
			t.Errorf("audit limit %d, want %d", a.GetLimit(), auditLimit)
		}
	})
	t.Run("Figures", func(t *testing.T) {
		wantContains(t, r.html,
			`id="tile-records"><b>7</b>`, `id="tile-candidates"><b>2</b>`, `id="tile-namespaces"><b>2</b>`,
			`id="tile-clients"><b>4</b>`, `id="tile-models"><b>1/2</b><span>model servers</span><small>live</small>`, `id="tile-encoder"><b>off</b>`, `id="tile-version"><b>9.8.7</b>`,
			"<title>decision active: 5</title>", "<title>note candidate: 2</title>", "<title>note deleted: 1</title>",
			`data-namespace="github/acme/api" data-records="5"`, `data-namespace="global" data-records="2"`,
			`data-total="2"`, // audit rows in the last 48 h
		)
	})
	t.Run("Jobs", func(t *testing.T) {
		wantContains(t, r.html, `id="review-state">last run 2026-11-30 04:20 UTC`, "reviewed 3 candidates, forgot 1",
			"daily at 03:00 (local time)", `id="sweep-state">never run`, "off: entity anchors are checked only inside Home Assistant")
	})
	t.Run("Models", func(t *testing.T) {
		wantContains(t, r.html,
			`<tr class="model-server" data-url="http://10.0.0.5:11434" data-state="live"><td class="mono">ollama_url</td>`,
			"<code>http://10.0.0.5:11434</code> <span class=\"pill\">Ollama</span> <span class=\"muted small\">qwen3.5:9b</span>",
			`</svg> live</td>`+"\n"+`<td class="nw">2026-11-30 14:19 UTC</td><td>1</td><td>40</td><td class="nw budget-today">0 calls, 0 tokens</td><td class="wrap">qwen3.5:9b: 3</td>`,
			`data-url="http://10.0.0.6:8080/v1" data-state="down"><td class="mono">ollama_direct_urls</td>`,
			"<code>http://10.0.0.6:8080/v1</code> <span class=\"pill\">OpenAI-style</span>",
			`</svg> down<div class="muted small">no answer: connection refused</div>`,
			"models: extraction qwen3.5:9b → qwen3:4b",
			`jobs waiting for a model: 0 <span class="muted small">(extraction: 2 queued)</span>`,
			"not configured: search is full text only")
	})
	t.Run("Unused", func(t *testing.T) {
		wantContains(t, r.html, `id="unused-state">not ready`, "Usage counted since 2026-11-28 14:20 UTC; the list is ready on 2026-12-28.")
	})
	t.Run("Clients", func(t *testing.T) {
		// README.md's recommended path: the token in a file, then hearth
		// connect --apply, one harness per client named for it.
		wantContains(t, r.html,
			`<code class="token">hearth_abcDEF123-_x</code>`,
			"mkdir -p ~/.config/hearth &amp;&amp; (umask 077; cat &gt; ~/.config/hearth/claude-code.token)   # paste the token above, then Ctrl-D",
			"hearth connect claude-code --url http://127.0.0.1:8765 --token-file ~/.config/hearth/claude-code.token --apply",
			`<p class="err small">The token file tokens/codex in the data directory is missing or unreadable.</p>`,
			"token supplied by you (token_sha256)",
			"hearth connect claude-code --url http://127.0.0.1:8765 --token-file ~/.config/hearth/laptop.token --apply",
			"hearth connect codex --url http://127.0.0.1:8765 --token-file ~/.config/hearth/laptop.token --apply\nexport HEARTH_TOKEN=&#34;$(cat ~/.config/hearth/laptop.token)&#34;",
			"OpenCode: the MCP server and Hearth&#39;s plugin</div>\n<pre>hearth connect opencode --url http://127.0.0.1:8765 --token-file ~/.config/hearth/laptop.token --apply</pre>",
			"GitHub Copilot CLI: the MCP server and the hooks; GitHub Copilot CLI reads the MCP token from HEARTH_TOKEN where it starts</div>\n<pre>hearth connect copilot --url http://127.0.0.1:8765 --token-file ~/.config/hearth/laptop.token --apply\nexport HEARTH_TOKEN=&#34;$(cat ~/.config/hearth/laptop.token)&#34;</pre>",
			"Gemini CLI: the MCP server and the hooks; Gemini CLI reads the MCP token from HEARTH_TOKEN where it starts</div>\n<pre>hearth connect gemini-cli --url http://127.0.0.1:8765 --token-file ~/.config/hearth/laptop.token --apply\nexport HEARTH_TOKEN=&#34;$(cat ~/.config/hearth/laptop.token)&#34;</pre>",
			"by address 192.168.1.20, read only",
			"hearth connect claude-code --url http://127.0.0.1:8765 --apply</pre>",
			"Rotate it when it may have leaked",
			"hearth token rotate --client codex --data ",
			"/api/memory_token_rotate -H &#34;Authorization: Bearer $ADMIN_TOKEN&#34;",
		)
		for _, bad := range []string{"claude mcp add", "hearth connect codex --url http://127.0.0.1:8765 --token-file ~/.config/hearth/claude-code.token",
			"hearth connect claude-code --url http://127.0.0.1:8765 --token-file ~/.config/hearth/codex.token",
			"hearth connect opencode --url http://127.0.0.1:8765 --token-file ~/.config/hearth/claude-code.token",
			"hearth connect copilot --url http://127.0.0.1:8765 --token-file ~/.config/hearth/claude-code.token",
			"hearth connect gemini-cli --url http://127.0.0.1:8765 --token-file ~/.config/hearth/claude-code.token"} {
			if strings.Contains(r.html, bad) {
				t.Errorf("the page shows %q", bad)
			}
		}
		if strings.Contains(r.html, "hearth_pagetoken") {
			t.Error("the page shows its own token")
		}
	})
	t.Run("Escaped", func(t *testing.T) {
		if strings.Contains(r.html, "<b>bold</b>") {
			t.Error("audit detail is not escaped")
		}
		wantContains(t, r.html, "&lt;b&gt;bold&lt;/b&gt;")
	})
	t.Run("SelfContained", func(t *testing.T) {
		checkSelfContained(t, r.html)
		checkMarkup(t, r.html)
	})
	t.Run("Links", func(t *testing.T) {
		wantContains(t, r.html,
			`<a href="records?status=active&amp;type=decision"><rect`, `<a href="records?status=deleted&amp;type=note"><rect`,
			`<a href="records?ns=github%2Facme%2Fapi"><rect`,
			`<a href="record?id=01JD3M5ZK9Q8W7E6R5T4Y3X2V1">01JD3M5ZK9Q8W7E6R5T4Y3X2V1</a>`,
			`<form class="find" method="get" action="records">`, `<a href="records" id="browse">`)
	})
}

func TestHandler_States(t *testing.T) {
	t.Parallel()
	t.Run("UnusedUnimplemented", func(t *testing.T) {
		a := baseAnswers()
		a.errs["Unused"] = status.Error(codes.Unimplemented, "method Unused not implemented")
		r, _ := render(t, a, Config{})
		wantContains(t, r.html, `id="unused-state">not ready`, "memory_unused is not available in this version.")
	})
	t.Run("UnusedReady", func(t *testing.T) {
		a := baseAnswers()
		a.unused = &hearthv1.UnusedResponse{Ready: true, LeftOut: 4, Records: []*hearthv1.UnusedRecord{
			{Id: "01JD3M5ZK9Q8W7E6R5T4Y3X2V1", Namespace: "global", Type: "note", Title: "Old note", CreatedAt: timestamppb.New(testNow.AddDate(0, -3, 0))},
		}}
		r, _ := render(t, a, Config{})
		wantContains(t, r.html, `<td class="wrap"><a href="record?id=01JD3M5ZK9Q8W7E6R5T4Y3X2V1">Old note</a></td>`, "<td>2026-08-30</td><td>never</td>", "4 more not shown.")
	})
	t.Run("UnusedNone", func(t *testing.T) {
		a := baseAnswers()
		a.unused = &hearthv1.UnusedResponse{Ready: true}
		r, _ := render(t, a, Config{})
		wantContains(t, r.html, `id="unused-state">none`)
	})
	t.Run("NeverRun", func(t *testing.T) {
		a := baseAnswers()
		a.audit.Entries = a.audit.Entries[:1]
		r, _ := render(t, a, Config{ReviewAt: "off"})
		wantContains(t, r.html, `id="review-state">never run`, "off (review_at)")
	})
	t.Run("NotAmongLatest", func(t *testing.T) {
		a := baseAnswers()
		a.audit.Entries = nil
		for i := 0; i < auditLimit; i++ {
			a.audit.Entries = append(a.audit.Entries, entry(testNow.Add(-time.Duration(i)*time.Minute), "store"))
		}
		r, _ := render(t, a, Config{})
		wantContains(t, r.html, `id="review-state">not among the latest 500 audit rows`,
			"Only the latest 500 rows are read", `data-total="500"`)
	})
	t.Run("ErrCalls", func(t *testing.T) {
		a := baseAnswers()
		a.errs["Status"] = status.Error(codes.PermissionDenied, "permission denied: client hearth:page lacks scope read")
		a.errs["Audit"] = status.Error(codes.Unavailable, "down")
		r, _ := render(t, a, Config{})
		if r.code != http.StatusOK {
			t.Fatalf("status %d, want the page with errors in its sections", r.code)
		}
		wantContains(t, r.html, "memory_status failed: PermissionDenied: permission denied", "memory_audit failed: Unavailable: down",
			`id="tile-records"><b>?</b>`, `id="review-state">unknown`)
		checkSelfContained(t, r.html)
	})
	t.Run("ModelsNotConfigured", func(t *testing.T) {
		a := baseAnswers()
		a.status.JobsWaitingForModel = 2
		a.status.Jobs = []*hearthv1.JobCount{{Kind: "extraction", State: "queued", Count: 2}}
		r, _ := render(t, a, Config{})
		wantContains(t, r.html, `id="models-state">No model server is configured`,
			`<p id="models-waiting" class="err">jobs waiting for a model: 2`, `id="tile-models"><b>none</b>`)
		if strings.Contains(r.html, `id="model-servers"`) {
			t.Error("a server table without servers")
		}
	})
	t.Run("ModelsNotProbed", func(t *testing.T) {
		a := baseAnswers()
		a.status.ModelsConfigured = true
		a.status.ModelServers = []*hearthv1.ModelServer{{Url: "http://10.0.0.5:11434", Format: "ollama", Tier: "fallback", Live: true}}
		r, _ := render(t, a, Config{})
		wantContains(t, r.html, `data-state="not probed yet"><td class="mono">ollama_fallback_url</td>`,
			`</svg> not probed yet</td>`+"\n"+`<td class="nw">never</td>`, `id="tile-models"><b>1/1</b>`)
	})
	t.Run("ModelBudget", func(t *testing.T) {
		a := baseAnswers()
		a.status.ModelsConfigured = true
		a.status.ModelServers = []*hearthv1.ModelServer{{Url: "http://10.0.0.5:11434", Format: "ollama", Tier: "primary", Live: true,
			CallsToday: 2000, PromptTokensToday: 30000, ReplyTokensToday: 4500, BudgetSpent: true}}
		a.status.ModelBudget = &hearthv1.ModelBudget{DailyCalls: 2000, Day: "2026-12-01", ResetsAt: timestamppb.New(testNow.Add(time.Hour)), Waiting: true}
		r, _ := render(t, a, Config{})
		wantContains(t, r.html, `<td class="nw budget-today">2000 calls, 34500 tokens <span class="pill">budget spent</span></td>`,
			`id="models-budget">budget per server and day: 2000 calls, no cap on tokens (day 2026-12-01, starts over`,
			`id="models-budget-state">the daily budget is spent on every live server`, "capture and answers go on without the model")
		a.status.ModelBudget.Paused = true
		r, _ = render(t, a, Config{})
		wantContains(t, r.html, `id="models-budget-state">model calls are paused (memory_model_resume lets them go)`)
		a.status.ModelBudget.Paused, a.status.ModelBudget.Waiting = false, false
		r, _ = render(t, a, Config{})
		if strings.Contains(r.html, `models-budget-state`) {
			t.Error("a budget that is not spent is said to hold work back")
		}
	})
	t.Run("EncoderConfigured", func(t *testing.T) {
		r, _ := render(t, baseAnswers(), Config{EmbedURL: "http://10.0.0.5:11434", EmbedModel: "qwen3-emb-0.6b"})
		wantContains(t, r.html, `id="tile-encoder"><b>on</b>`, "<code>http://10.0.0.5:11434</code>", "qwen3-emb-0.6b", `id="tile-models"><b>none</b>`)
	})
}

// BenchmarkHandler renders the page from a full audit read (500 rows), every
// type and status and more namespaces than the chart draws.
func BenchmarkHandler(b *testing.B) {
	a := baseAnswers()
	a.audit.Entries = nil
	for i := 0; i < auditLimit; i++ {
		a.audit.Entries = append(a.audit.Entries, entry(testNow.Add(-time.Duration(i)*7*time.Minute), "store"))
	}
	for _, ty := range []string{"decision", "constraint", "requirement", "procedure", "preference", "note", "summary"} {
		for _, st := range []string{"active", "candidate", "superseded", "deleted"} {
			a.status.Counts = append(a.status.Counts, &hearthv1.TypeStatusCount{Type: ty, Status: st, Count: 40})
		}
	}
	for i := 0; i < 30; i++ {
		a.status.Namespaces = append(a.status.Namespaces, &hearthv1.NamespaceCount{Namespace: "github/acme/repo-" + strconv.Itoa(i), Records: uint32(i * 3)})
	}
	backend := gatewaytest.New(b, a.respond)
	h := Guard(IngressAllowed, New(Config{
		Conn: backend.Conn, Token: "t", API: netip.MustParseAddrPort("127.0.0.1:8765"),
		Clients: []Client{{Name: "laptop", Scopes: []string{"read"}, Supplied: true}},
		Now:     func() time.Time { return testNow },
	}))
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8099/", nil)
		r.RemoteAddr = "127.0.0.1:50000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
}

// TestHandler_TokensOnlyToProxy: generated tokens are shown to the ingress
// proxy only. A loopback peer (development) gets commands that read the
// token from its 0600 file, and never the token itself.
func TestHandler_TokensOnlyToProxy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const token = "hearth_abcDEF123-_x"
	if err := os.WriteFile(filepath.Join(dir, "claude-code"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Config{TokensDir: dir, Clients: []Client{{Name: "claude-code", Scopes: []string{"read", "write"}}}, ReviewAt: "off", AnchorSweepHours: 6}
	proxy, _ := render(t, baseAnswers(), cfg)
	if !strings.Contains(proxy.html, token) {
		t.Errorf("the ingress proxy does not see the token")
	}
	local, _ := renderFrom(t, baseAnswers(), cfg, "127.0.0.1:50000")
	if local.code != http.StatusOK {
		t.Fatalf("loopback: status %d", local.code)
	}
	if strings.Contains(local.html, token) {
		t.Errorf("a loopback peer sees the token")
	}
	path := filepath.Join(dir, "claude-code")
	wantContains(t, local.html,
		`<p class="note small">This page shows no token to a browser on this machine`,
		"mkdir -p ~/.config/hearth &amp;&amp; install -m 600 "+path+" ~/.config/hearth/claude-code.token",
		"hearth connect claude-code --url http://127.0.0.1:8765 --token-file ~/.config/hearth/claude-code.token --apply",
	)
}
