package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
)

// adminToken is the token of the "laptop" client of pageOptions, supplied
// as token_sha256 the way an admin supplies one.
const adminToken = "made-elsewhere-0123456789abcdefghijklmnopqrstuv"

// pageOptions are testOptions plus a client with admin scope whose token
// the admin supplied.
func pageOptions() options.Options {
	o := testOptions()
	sum := sha256.Sum256([]byte(adminToken))
	o.Clients = append(o.Clients, options.Client{Name: "laptop", Scopes: []options.Scope{options.ScopeRead, options.ScopeAdmin},
		TokenSHA256: hex.EncodeToString(sum[:])})
	return o
}

// startPageDaemon runs a whole daemon with the ingress listener on
// 127.0.0.1:0 over dir. allow narrows who the page serves (nil: the
// production rule).
func startPageDaemon(tb testing.TB, dir string, opts options.Options, allow func(netip.Addr) bool) *testDaemon {
	tb.Helper()
	// The page is checked as the Home Assistant admin sees it through the
	// ingress proxy, tokens shown; TestPage_TokensOnlyThroughIngress covers
	// the default rule.
	return openDaemon(tb, &Daemon{
		Config:         Config{DataDir: dir, IngressListen: "127.0.0.1:0", Options: opts},
		IngressAllow:   allow,
		PageShowTokens: func(netip.Addr) bool { return true },
	}, true)
}

func getPage(tb testing.TB, c *http.Client, url string, hdr map[string]string) (int, string) {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		tb.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestIngress_Off: a plain daemon opens no page listener and its API
// listener does not serve the page.
func TestIngress_Off(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, testOptions())
	if a := td.IngressAddr(); a != "" {
		t.Errorf("IngressAddr = %q, want none without --ingress-listen", a)
	}
	if code, body := getPage(t, http.DefaultClient, td.url+"/", nil); code == http.StatusOK || strings.Contains(body, "<svg") {
		t.Errorf("API listener GET /: %d, want no page", code)
	}
	t.Run("ErrBadAddress", func(t *testing.T) {
		d := &Daemon{Config: Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", IngressListen: "127.0.0.1:notaport", Options: testOptions()}, Log: discardLog()}
		err := d.Open(context.Background())
		if err == nil {
			d.Close(context.Background())
		}
		if err == nil || !strings.Contains(err.Error(), "ingress listen") {
			t.Errorf("got %v, want an error naming the ingress listener", err)
		}
	})
}

// TestIngress_Sources holds the ingress rule on the daemon's real listener:
// with the allowed set narrowed to 127.0.0.1, a client bound to 127.0.0.2 is
// refused whatever it claims in headers, and 127.0.0.1 gets the page.
func TestIngress_Sources(t *testing.T) {
	t.Parallel()
	only := netip.MustParseAddr("127.0.0.1")
	td := startPageDaemon(t, t.TempDir(), pageOptions(), func(a netip.Addr) bool { return a == only })
	url := "http://" + td.IngressAddr() + "/"
	t.Run("OK", func(t *testing.T) {
		code, body := getPage(t, dialFrom(only), url, nil)
		if code != http.StatusOK || !strings.Contains(body, "<svg") {
			t.Errorf("from 127.0.0.1: %d, want 200 and the page", code)
		}
	})
	t.Run("ErrRefusedSource", func(t *testing.T) {
		spoof := map[string]string{"X-Forwarded-For": "172.30.32.2", "X-Ingress-Path": "/api/hassio_ingress/x", "X-Forwarded-Host": "127.0.0.1"}
		for _, hdr := range []map[string]string{nil, spoof} {
			code, body := getPage(t, dialFrom(readerIP), url, hdr)
			if code != http.StatusForbidden || strings.Contains(body, "hearth_") {
				t.Errorf("from 127.0.0.2 (headers %v): %d, want 403 and no token", hdr, code)
			}
		}
	})
	t.Run("ProductionRuleAllowsLoopback", func(t *testing.T) {
		td := startPageDaemon(t, t.TempDir(), pageOptions(), nil)
		if code, _ := getPage(t, dialFrom(readerIP), "http://"+td.IngressAddr()+"/", nil); code != http.StatusOK {
			t.Errorf("from 127.0.0.2 under the production rule: %d, want 200 (all of 127.0.0.0/8 is loopback)", code)
		}
	})
	t.Run("PageTokenStaysInMemory", func(t *testing.T) {
		entries, _ := os.ReadDir(td.TokensDir())
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if want := generatedClients(pageOptions()); fmt.Sprint(names) != fmt.Sprint(want) || len(want) < 2 {
			t.Errorf("tokens dir holds %v, want only the generated tokens of configured clients", names)
		}
	})
}

// TestAdmin_Audit holds memory_audit over every transport: admin scope,
// newest first, the limit.
func TestAdmin_Audit(t *testing.T) {
	t.Parallel()
	// A scope refusal is written once per client, method and minute, later
	// ones counted (docs/operations.md): each transport calls as a client
	// of its own, so that each writes its refusal.
	o := pageOptions()
	for _, name := range []string{"rest", "mcp", "grpc"} {
		o.Clients = append(o.Clients, options.Client{Name: "audit-" + name, Scopes: []options.Scope{options.ScopeRead, options.ScopeWrite}})
	}
	td := startPageDaemon(t, t.TempDir(), o, nil)
	for _, tr := range transports(td) {
		t.Run(tr.name(), func(t *testing.T) {
			client := "audit-" + tr.name()
			tok := td.tokens[client]
			if tok == "" {
				t.Fatalf("no token for %s", client)
			}
			if r := tr.call(t, tok, "memory_store", storeArgs("github/acme/audit", "Audited "+tr.name(), "A row for the audit.")); !r.ok {
				t.Fatalf("store: %v", r)
			}
			r := tr.call(t, tok, "memory_audit", map[string]any{})
			if r.ok || r.code != "PERMISSION_DENIED" || r.http != http.StatusForbidden {
				t.Errorf("without admin: %v, want PERMISSION_DENIED 403", r)
			}
			r = tr.call(t, adminToken, "memory_audit", map[string]any{"limit": 2})
			if !r.ok {
				t.Fatalf("admin: %v", r)
			}
			rows := list(r.body, "entries")
			if len(rows) != 2 {
				t.Fatalf("%d rows, want 2", len(rows))
			}
			// The refusal just above is the newest row, the store before it.
			if str(rows[0], "action") != "refuse.auth" || str(rows[0], "client") != client ||
				str(rows[1], "action") != "store" || str(rows[1], "namespace") != "github/acme/audit" {
				t.Errorf("rows %v, want the refusal then the store", rows)
			}
			r = tr.call(t, adminToken, "memory_audit", map[string]any{"limit": 501})
			if r.ok || r.code != "INVALID_ARGUMENT" || str(r.body, "error", "field") != "limit" {
				t.Errorf("limit 501: %v, want INVALID_ARGUMENT naming limit", r)
			}
		})
	}
}

// seedPageData writes a realistic store into dir before the daemon opens
// it: a few hundred records over 60 hours across namespaces, types and
// statuses, with updates, supersessions, forgets, refusals and a nightly
// maintenance row, each at its own time.
func seedPageData(tb testing.TB, dir string, end time.Time) {
	tb.Helper()
	ctx := context.Background()
	db, err := storage.Open(ctx, filepath.Join(dir, "hearth.db"))
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	const n = 320
	start := end.Add(-60 * time.Hour)
	step := 60 * time.Hour / 500 // about one transaction per step
	tick := 0
	db.Now = func() time.Time {
		tick++
		if at := start.Add(time.Duration(tick) * step); at.Before(end) {
			return at
		}
		return end
	}
	text := func(field, v string) screen.Text {
		t, err := screen.Check(field, v)
		if err != nil {
			tb.Fatal(err)
		}
		return t
	}
	namespaces := []string{"github/acme/api", "github/acme/api", "github/acme/api", "github/acme/web", "github/acme/web",
		"github/acme/infra", "gitea/home/ha-config", "gitea/home/ha-config", "projects/home-stack", "topics/go", "global", "local/scratch"}
	types := []string{"decision", "constraint", "requirement", "procedure", "preference", "note", "note", "summary", "decision"}
	writers := []string{"claude-code", "codex"}
	last := map[string]*storage.Record{}
	for i := 0; i < n; i++ {
		ns := namespaces[(i*7)%len(namespaces)]
		nr := storage.NewRecord{
			Namespace: ns, Type: types[i%len(types)], Confidence: 0.8, Writer: writers[i%2],
			Title:   text("title", fmt.Sprintf("Finding %d about %s", i, ns)),
			Content: text("content", fmt.Sprintf("Record %d: the retry budget for %s is %d attempts.", i, ns, i%5+1)),
			Topics:  []screen.Text{text("topics", []string{"db", "http", "ci", "home"}[i%4])},
			Source:  storage.SourceStore, Status: storage.StatusActive,
		}
		if i%7 == 4 {
			nr.Source, nr.Status = storage.SourceExtraction, storage.StatusCandidate
		}
		if prev := last[ns]; i%17 == 16 && nr.Status == storage.StatusActive && prev != nil && prev.Status == storage.StatusActive {
			nr.Supersedes = prev.ID
		}
		rec, err := db.Store(ctx, nr)
		if err != nil {
			tb.Fatalf("seed store %d: %v", i, err)
		}
		switch {
		case i%11 == 10:
			if _, err := db.Forget(ctx, rec.ID, rec.Revision, text("reason", "obsolete"), nr.Writer); err != nil {
				tb.Fatalf("seed forget %d: %v", i, err)
			}
			continue
		case i%5 == 2:
			title := text("title", fmt.Sprintf("Finding %d (revised)", i))
			if rec, err = db.Update(ctx, rec.ID, rec.Revision, storage.Changes{Title: &title}, nr.Writer); err != nil {
				tb.Fatalf("seed update %d: %v", i, err)
			}
		}
		last[ns] = rec
		if i%40 == 39 {
			if err := db.Audit(ctx, storage.AuditEntry{Client: "-", Action: "refuse.auth", Detail: screen.Redact("/hearth.v1.MemoryService/Store: unknown token")}); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := db.Audit(ctx, storage.AuditEntry{At: end.Add(-20 * time.Hour), Client: "hearth", Action: "maintenance",
		Detail: screen.Redact("nightly review: 6 candidates, 2 forgotten as duplicates, 4 kept; 0 expired; 3 purged")}); err != nil {
		tb.Fatal(err)
	}
}

// TestPage_Chromium opens the page in headless Chromium against a daemon
// holding a realistic data set: it takes a screenshot (.tmp/artifacts/),
// checks that the page logs nothing to the console and requests nothing but
// itself, and that its figures are the ones the API reports.
func TestPage_Chromium(t *testing.T) {
	t.Parallel()
	browser := os.Getenv("HEARTH_CHROMIUM")
	if browser == "" {
		t.Skip("HEARTH_CHROMIUM is not set (make test installs Chromium and sets it)")
	}
	dir := t.TempDir()
	seedPageData(t, dir, time.Now())
	// No nightly review may run and write audit rows while the page is
	// compared with the API.
	opts := pageOptions()
	opts.ReviewAt = options.ReviewAt{Off: true}
	td := startPageDaemon(t, dir, opts, nil)
	tok := td.tokens["claude-code"]
	rest := restTransport{td}
	for i, ns := range []string{"github/acme/api", "topics/home-assistant"} {
		if r := rest.call(t, tok, "memory_store", storeArgs(ns, fmt.Sprintf("Live store %d", i), "Stored over REST while the daemon runs.")); !r.ok {
			t.Fatalf("store: %v", r)
		}
	}
	if r := rest.call(t, "hearth_wrong", "memory_status", map[string]any{}); r.ok {
		t.Fatal("a wrong token was accepted")
	}
	// A record whose file is gone, and a sweep (no Home Assistant here),
	// before the page is compared with the API.
	flagged := str(must(t, "store", rest.call(t, tok, "memory_store", anchoredArgs("github/acme/api", "Chart values",
		"The chart reads deploy/values.yaml.", "path:deploy/values.yaml"))), "record", "id")
	must(t, "report", rest.call(t, tok, "memory_anchor_report", map[string]any{
		"id": flagged, "anchor": "path:deploy/values.yaml", "state": "unavailable", "detail": "removed in 3f2a1c"}))
	must(t, "sweep", rest.call(t, tok, "memory_anchor_sweep", map[string]any{}))

	// What the API reports, read before the page is drawn; nothing writes
	// after this point.
	st := rest.call(t, tok, "memory_status", map[string]any{})
	audit := rest.call(t, adminToken, "memory_audit", map[string]any{"limit": 500})
	unused := rest.call(t, tok, "memory_unused", map[string]any{})
	if !st.ok || !audit.ok {
		t.Fatalf("status %v / audit %v", st, audit)
	}
	if num(st.body, "records") < 250 {
		t.Fatalf("seeded %v records, want a few hundred", num(st.body, "records"))
	}

	pageURL := "http://" + td.IngressAddr() + "/"
	art, err := filepath.Abs(filepath.Join("..", "..", ".tmp", "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(art, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(art, "page.png")
	netlog := filepath.Join(t.TempDir(), "netlog.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir="+t.TempDir(),
		"--hide-scrollbars", "--window-size=1280,3400", "--screenshot="+shot, "--dump-dom",
		"--enable-logging=stderr", "--v=0", "--log-net-log="+netlog, pageURL)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.Bytes())
	}
	dom := stdout.String()
	t.Logf("screenshot: %s", shot)
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 10_000 {
		t.Errorf("screenshot %s: %v, want an image", shot, err)
	}

	t.Run("NoConsoleMessages", func(t *testing.T) {
		for _, line := range strings.Split(stderr.String(), "\n") {
			if strings.Contains(line, ":CONSOLE") || strings.Contains(line, "Content Security Policy") {
				t.Errorf("console: %s", line)
			}
		}
	})
	t.Run("OnlyThePageRequested", func(t *testing.T) {
		origin := strings.TrimSuffix(pageURL, "/")
		var page int
		for _, r := range netLogRequests(t, netlog) {
			switch {
			case r.URL == pageURL && r.Method == "GET":
				page++
			case strings.HasPrefix(r.URL, origin):
				t.Errorf("the page requested %s %s", r.Method, r.URL)
			case r.Initiator == origin:
				t.Errorf("the page requested %s %s elsewhere", r.Method, r.URL)
			}
		}
		if page != 1 {
			t.Errorf("page loaded %d times, want 1 (is the net log read right?)", page)
		}
	})
	t.Run("SelfContainedHTML", func(t *testing.T) {
		code, html := getPage(t, http.DefaultClient, pageURL, nil)
		if code != http.StatusOK {
			t.Fatalf("GET page: %d", code)
		}
		checkPageHTML(t, html)
	})
	t.Run("Tiles", func(t *testing.T) {
		var cand float64
		for _, c := range list(st.body, "counts") {
			if str(c, "status") == "candidate" {
				cand += num(c, "count")
			}
		}
		if cand == 0 {
			t.Fatal("the data set holds no candidate")
		}
		for key, want := range map[string]string{
			"records":    strconv.Itoa(int(num(st.body, "records"))),
			"candidates": strconv.Itoa(int(cand)),
			"namespaces": strconv.Itoa(len(list(st.body, "namespaces"))),
			"clients":    strconv.Itoa(len(pageOptions().Clients)),
			"models":     "none",
			"encoder":    "off",
			"version":    str(st.body, "version"),
		} {
			if got := tileValue(dom, key); got != want {
				t.Errorf("tile %s = %q, want %q", key, got, want)
			}
		}
	})
	t.Run("TypesAndStatuses", func(t *testing.T) {
		statuses := map[string]bool{}
		for _, c := range list(st.body, "counts") {
			want := fmt.Sprintf("<title>%s %s: %d</title>", str(c, "type"), str(c, "status"), int(num(c, "count")))
			if !strings.Contains(dom, want) {
				t.Errorf("page lacks %s", want)
			}
			statuses[str(c, "status")] = true
		}
		if len(statuses) != 4 {
			t.Errorf("the data set has statuses %v, want all four", statuses)
		}
	})
	t.Run("Namespaces", func(t *testing.T) {
		for _, n := range list(st.body, "namespaces") {
			want := fmt.Sprintf(`data-namespace="%s" data-records="%d"`, str(n, "namespace"), int(num(n, "records")))
			if !strings.Contains(dom, want) {
				t.Errorf("page lacks %s", want)
			}
		}
	})
	t.Run("AuditPerHour", func(t *testing.T) {
		m := regexp.MustCompile(`data-since="([^"]+)" data-total="(\d+)"`).FindStringSubmatch(dom)
		if m == nil {
			t.Fatal("no hour chart")
		}
		since, err := time.Parse(time.RFC3339, m[1])
		if err != nil {
			t.Fatal(err)
		}
		want := make([]int, 48)
		total := 0
		rows := list(audit.body, "entries")
		if len(rows) >= 500 {
			t.Fatalf("%d audit rows: the data set should fit one memory_audit call", len(rows))
		}
		for _, e := range rows {
			at, _ := time.Parse(time.RFC3339Nano, str(e, "at"))
			if i := int(at.Sub(since) / time.Hour); !at.Before(since) && i < 48 {
				want[i]++
				total++
			}
		}
		if m[2] != strconv.Itoa(total) || total < 200 {
			t.Errorf("chart total %s, want %d rows since %s from memory_audit", m[2], total, since)
		}
		var got []int
		for _, b := range regexp.MustCompile(`data-n="(\d+)"`).FindAllStringSubmatch(dom, -1) {
			n, _ := strconv.Atoi(b[1])
			got = append(got, n)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("bars %v, want %v", got, want)
		}
	})
	t.Run("LatestAuditRows", func(t *testing.T) {
		first := list(audit.body, "entries")[0]
		row := regexp.MustCompile(`(?s)<section id="audit">.*?<tr><td[^>]*>[^<]*</td><td[^>]*>([^<]*)</td><td[^>]*>([^<]*)</td>`).FindStringSubmatch(dom)
		if row == nil || row[1] != str(first, "client") || row[2] != str(first, "action") {
			t.Errorf("first audit row %v, want client %s action %s", row, str(first, "client"), str(first, "action"))
		}
	})
	t.Run("Jobs", func(t *testing.T) {
		if !strings.Contains(dom, `id="review-state">last run `) || !strings.Contains(dom, "2 forgotten as duplicates") {
			t.Error("the nightly review does not show the maintenance row")
		}
		if !strings.Contains(dom, "off (review_at)") {
			t.Error("review_at off is not shown")
		}
		if !strings.Contains(dom, `id="sweep-state">last run `) || !strings.Contains(dom, "Hearth runs outside Home Assistant: entity anchors are not checked") {
			t.Error("the anchor sweep does not show the sweep without Home Assistant")
		}
	})
	t.Run("Flagged", func(t *testing.T) {
		if num(st.body, "flagged_total") != 1 || !strings.Contains(dom, `class="flagged-row" data-id="`+flagged+`"`) ||
			!strings.Contains(dom, "removed in 3f2a1c") || !strings.Contains(dom, `id="flagged-total">1 flagged.`) {
			t.Errorf("the flagged record is not shown as memory_status lists it: %v", get(st.body, "flagged"))
		}
	})
	t.Run("Unused", func(t *testing.T) {
		if !unused.ok || !get(unused.body, "ready").(bool) {
			if !strings.Contains(dom, `id="unused-state">not ready`) {
				t.Errorf("memory_unused %v, but the page does not say not ready", unused)
			}
		}
	})
	t.Run("Clients", func(t *testing.T) {
		base := "http://" + td.Addr()
		for _, want := range []string{
			`<code class="token">` + tok + `</code>`,
			`<code class="token">` + td.tokens["codex"] + `</code>`,
			"hearth connect claude-code --url " + base + " --token-file ~/.config/hearth/claude-code.token --apply",
			"hearth connect codex --url " + base + " --token-file ~/.config/hearth/codex.token --apply\n" +
				`export HEARTH_TOKEN="$(cat ~/.config/hearth/codex.token)"`,
			"by address 127.0.0.2, read only",
			"token supplied by you",
		} {
			if !strings.Contains(dom, want) {
				t.Errorf("page lacks %q", want)
			}
		}
		if strings.Contains(dom, adminToken) {
			t.Error("the page shows a supplied token")
		}
	})
}

// tileValue reads a status tile's figure from the page.
func tileValue(dom, key string) string {
	m := regexp.MustCompile(`id="tile-` + regexp.QuoteMeta(key) + `"><b>([^<]*)</b>`).FindStringSubmatch(dom)
	if m == nil {
		return ""
	}
	return m[1]
}

// netRequest is one URL request from Chromium's net log.
type netRequest struct {
	URL, Method, Initiator string
}

// netLogRequests reads every request that started a job from a Chromium
// net log (--log-net-log).
func netLogRequests(tb testing.TB, path string) []netRequest {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var log struct {
		Constants struct {
			LogEventTypes map[string]int `json:"logEventTypes"`
		} `json:"constants"`
		Events []struct {
			Type   int `json:"type"`
			Params struct {
				URL       string `json:"url"`
				Method    string `json:"method"`
				Initiator string `json:"initiator"`
			} `json:"params"`
		} `json:"events"`
	}
	if err := json.Unmarshal(b, &log); err != nil {
		tb.Fatalf("net log: %v", err)
	}
	start, ok := log.Constants.LogEventTypes["URL_REQUEST_START_JOB"]
	if !ok {
		tb.Fatal("net log: no URL_REQUEST_START_JOB event type")
	}
	var out []netRequest
	for _, e := range log.Events {
		if e.Type == start && e.Params.URL != "" {
			out = append(out, netRequest{URL: e.Params.URL, Method: e.Params.Method, Initiator: e.Params.Initiator})
		}
	}
	return out
}

// TestPage_TokensOnlyThroughIngress runs the daemon with the production
// page rules: a loopback visitor is served the page but sees no generated
// token, only commands that copy it from its file.
func TestPage_TokensOnlyThroughIngress(t *testing.T) {
	t.Parallel()
	td := openDaemon(t, &Daemon{Config: Config{DataDir: t.TempDir(), IngressListen: "127.0.0.1:0", Options: testOptions()}}, true)
	code, body := getPage(t, http.DefaultClient, "http://"+td.IngressAddr()+"/", nil)
	if code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	for name, tok := range td.tokens {
		if strings.Contains(body, tok) {
			t.Errorf("the page shows %s's token to a loopback visitor", name)
		}
	}
	// The token is copied from its file into the one the connect command
	// reads (README.md's recommended path).
	if !strings.Contains(body, "install -m 600 "+filepath.Join(td.TokensDir(), "codex")+" ~/.config/hearth/codex.token") {
		t.Errorf("the page does not tell a loopback visitor where codex's token is")
	}
	if !strings.Contains(body, "hearth connect codex --url ") || !strings.Contains(body, " --token-file ~/.config/hearth/codex.token --apply") {
		t.Errorf("the page does not tell a loopback visitor how codex reads its token")
	}
}
