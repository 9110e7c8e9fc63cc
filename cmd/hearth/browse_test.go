package main

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/options"
	xhtml "golang.org/x/net/html"
)

// pageLinks are the only links a page view may carry: itself, the record
// browser's views and the data: icon, all relative.
var pageLinks = regexp.MustCompile(`^(\./|data:,|records(\?[A-Za-z0-9_.~%&;=+-]*)?|record\?id=[0-9A-HJKMNP-TV-Z]{26})$`)

// checkPageHTML fails unless a page view can render with no request but its
// own relative links: no script, frame, image or CSS url(), and no form but
// a GET form to records.
func checkPageHTML(t *testing.T, page string) {
	t.Helper()
	for _, m := range regexp.MustCompile(`(?i)\s(src|href|action|formaction|srcset|poster|xlink:href|data|ping)\s*=\s*("[^"]*"|'[^']*')`).FindAllStringSubmatch(page, -1) {
		v := strings.Trim(m[2], `"'`)
		switch {
		case m[1] == "href" && pageLinks.MatchString(v):
		case m[1] == "action" && v == "records":
		default:
			t.Errorf("attribute %s=%q: want the page's relative links only", m[1], v)
		}
	}
	for _, f := range regexp.MustCompile(`(?i)<form\b[^>]*>`).FindAllString(page, -1) {
		if !strings.Contains(f, `method="get"`) {
			t.Errorf("form %s: want GET forms only", f)
		}
	}
	for _, bad := range []string{"<script", "<iframe", "<img", "url(", "@import", `="/`, `='/`, `src="http`, `href="http`, `method="post"`} {
		if strings.Contains(strings.ToLower(page), bad) {
			t.Errorf("page contains %q", bad)
		}
	}
}

// chromiumView is one page view as headless Chromium loaded it.
type chromiumView struct {
	dom    string
	stderr string
	reqs   []netRequest
}

// openInChromium loads pageURL in headless Chromium, saves a screenshot as
// .tmp/artifacts/<shot> and returns the DOM after load, what Chromium
// logged and every request it made.
func openInChromium(t *testing.T, browser, pageURL, shot string, height int) chromiumView {
	t.Helper()
	art, err := filepath.Abs(filepath.Join("..", "..", ".tmp", "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(art, 0o755); err != nil {
		t.Fatal(err)
	}
	shotPath := filepath.Join(art, shot)
	netlog := filepath.Join(t.TempDir(), "netlog.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir="+t.TempDir(),
		"--hide-scrollbars", "--window-size=1280,"+strconv.Itoa(height), "--screenshot="+shotPath, "--dump-dom",
		"--enable-logging=stderr", "--v=0", "--log-net-log="+netlog, pageURL)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.Bytes())
	}
	t.Logf("screenshot: %s", shotPath)
	if fi, err := os.Stat(shotPath); err != nil || fi.Size() < 10_000 {
		t.Errorf("screenshot %s: %v, want an image", shotPath, err)
	}
	return chromiumView{dom: stdout.String(), stderr: stderr.String(), reqs: netLogRequests(t, netlog)}
}

// checkLoadedAlone fails when Chromium logged a console message or a
// security policy violation, or requested anything but pageURL, once.
func (v chromiumView) checkLoadedAlone(t *testing.T, pageURL string) {
	t.Helper()
	for _, line := range strings.Split(v.stderr, "\n") {
		if strings.Contains(line, ":CONSOLE") || strings.Contains(line, "Content Security Policy") {
			t.Errorf("console: %s", line)
		}
	}
	u, _ := url.Parse(pageURL)
	origin := u.Scheme + "://" + u.Host
	loads := 0
	for _, r := range v.reqs {
		switch {
		case r.URL == pageURL && r.Method == "GET":
			loads++
		case strings.HasPrefix(r.URL, origin):
			t.Errorf("the view requested %s %s", r.Method, r.URL)
		case r.Initiator == origin:
			t.Errorf("the view requested %s %s elsewhere", r.Method, r.URL)
		}
	}
	if loads != 1 {
		t.Errorf("%s loaded %d times, want 1", pageURL, loads)
	}
}

// checkDOM parses a view as Chromium left it and fails on any element or
// attribute that user text could have made: scripts, images, frames, a
// second style sheet, event handlers, links off the page. It returns the
// view's text.
func checkDOM(t *testing.T, dom string) string {
	t.Helper()
	doc, err := xhtml.Parse(strings.NewReader(dom))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	var text strings.Builder
	styles := 0
	var walk func(n *xhtml.Node)
	walk = func(n *xhtml.Node) {
		switch n.Type {
		case xhtml.TextNode:
			text.WriteString(n.Data)
		case xhtml.ElementNode:
			switch n.Data {
			case "script", "img", "iframe", "object", "embed", "base", "image", "use", "foreignObject":
				t.Errorf("element <%s>", n.Data)
			case "style":
				styles++
			}
			for _, a := range n.Attr {
				k := strings.ToLower(a.Key)
				switch {
				case strings.HasPrefix(k, "on"), k == "src", k == "srcset", k == "xlink:href":
					t.Errorf("<%s %s=%q>", n.Data, a.Key, a.Val)
				case k == "href" && !pageLinks.MatchString(a.Val):
					t.Errorf("<%s href=%q>", n.Data, a.Val)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if styles != 1 {
		t.Errorf("%d style elements, want 1", styles)
	}
	return text.String()
}

// rowIDs reads the record ids of a records view's rows, in order.
func rowIDs(dom string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<tr class="rec" data-id="([^"]*)"`).FindAllStringSubmatch(dom, -1) {
		out = append(out, m[1])
	}
	return out
}

func recordIDs(body map[string]any, key string) []string {
	var out []string
	for _, r := range list(body, key) {
		out = append(out, str(r, "id"))
	}
	return out
}

// linkNamed returns the href of the element with the given id, resolved
// against base.
func linkNamed(t *testing.T, dom, id, base string) string {
	t.Helper()
	m := regexp.MustCompile(`<a href="([^"]*)" id="` + regexp.QuoteMeta(id) + `"`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("no link #%s", id)
	}
	b, _ := url.Parse(base)
	ref, err := url.Parse(html.UnescapeString(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	return b.ResolveReference(ref).String()
}

// timelinePage is what a page of the record browser lists from args on:
// memory_timeline's replies, each asked after the last record of the one
// before, up to page.listRows records. more says whether more follow.
func timelinePage(t *testing.T, rest restTransport, tok string, args map[string]any) (ids []string, more bool) {
	t.Helper()
	const rows = 50 // page.listRows
	after := ""
	for len(ids) < rows {
		a, limit := maps.Clone(args), rows-len(ids)
		a["limit"] = limit
		if after != "" {
			a["after_id"] = after
		}
		r := rest.call(t, tok, "memory_timeline", a)
		if !r.ok {
			t.Fatalf("memory_timeline %v: %v", a, r)
		}
		got := recordIDs(r.body, "records")
		ids = append(ids, got...)
		truncated, _ := r.body["truncated"].(bool)
		if more = len(got) > 0 && (truncated || len(got) == limit); !more {
			break
		}
		after = got[len(got)-1]
	}
	return ids, more
}

// hostileTitle and hostileContent are user text built to break out of the
// views' HTML, attributes, URLs and styles.
const (
	hostileTitle   = `<script>alert("t")</script> "><img src=x onerror=alert(1)> javascript:alert(1)`
	hostileContent = `</pre><script>alert(2)</script> ' onmouseover='alert(3) <style>body{display:none}</style>`
)

// TestBrowser_Chromium opens the record browser in headless Chromium
// against a daemon holding records of every type and status: the list, its
// filters and next page, a search, and the record view of a record with a
// hostile title, anchors, evidence, history and usage. Each view logs
// nothing, requests nothing but itself, and shows what the API reports;
// hostile text renders as text. Screenshots go to .tmp/artifacts/.
func TestBrowser_Chromium(t *testing.T) {
	t.Parallel()
	browser := os.Getenv("HEARTH_CHROMIUM")
	if browser == "" {
		t.Skip("HEARTH_CHROMIUM is not set (make test installs Chromium and sets it)")
	}
	dir := t.TempDir()
	seedPageData(t, dir, time.Now())
	opts := pageOptions()
	opts.ReviewAt = options.ReviewAt{Off: true}
	td := startPageDaemon(t, dir, opts, nil)
	tok := td.tokens["claude-code"]
	rest := restTransport{td}

	// The hostile record: updated, witnessed, refused once, searched and
	// fetched, so every part of its view has rows.
	args := storeArgs("github/acme/api", hostileTitle, hostileContent)
	args["anchors"] = []string{"url:javascript://alert(1)", `path:"><script>x</script>`, "path:src/retry.go"}
	args["topics"] = []string{"security"}
	st := rest.call(t, tok, "memory_store", args)
	if !st.ok {
		t.Fatalf("store: %v", st)
	}
	id := str(st.body, "record", "id")
	if r := rest.call(t, tok, "memory_update", map[string]any{"id": id, "revision": 1, "changes": map[string]any{"confidence": 0.6}}); !r.ok {
		t.Fatalf("update: %v", r)
	}
	if r := rest.call(t, td.tokens["codex"], "memory_evidence", map[string]any{"id": id, "stance": "corroborates", "note": `<b>checked</b> "twice"`}); !r.ok {
		t.Fatalf("evidence: %v", r)
	}
	if r := rest.call(t, tok, "memory_update", map[string]any{"id": id, "revision": 1, "changes": map[string]any{"title": "stale"}}); r.ok {
		t.Fatal("a stale update was applied")
	}
	if r := rest.call(t, tok, "memory_get", map[string]any{"ids": []string{id}}); !r.ok {
		t.Fatalf("get: %v", r)
	}
	base := "http://" + td.IngressAddr() + "/"

	t.Run("List", func(t *testing.T) {
		// Issue 42: a page lists 50 records, not the 14 or so one
		// memory_timeline reply holds.
		one := rest.call(t, tok, "memory_timeline", map[string]any{"within": "all", "limit": 100})
		if n := len(recordIDs(one.body, "records")); !one.body["truncated"].(bool) || n >= 50 {
			t.Fatalf("one memory_timeline reply holds %d records, truncated %v: the data set does not show paging over replies", n, one.body["truncated"])
		}
		wantIDs, more := timelinePage(t, rest, tok, map[string]any{"within": "all"})
		status := rest.call(t, tok, "memory_status", map[string]any{})
		pageURL := base + "records"
		v := openInChromium(t, browser, pageURL, "records.png", 6000)
		v.checkLoadedAlone(t, pageURL)
		checkDOM(t, v.dom)
		got := rowIDs(v.dom)
		if len(got) != 50 || !slices.Equal(got, wantIDs) || !more {
			t.Errorf("rows %v,\nwant the first 50 of memory_timeline's replies %v", got, wantIDs)
		}
		if tileValue(v.dom, "shown") != "50" || tileValue(v.dom, "matching") != strconv.Itoa(int(num(status.body, "records"))) {
			t.Errorf("tiles shown %q matching %q, want 50 and memory_status's %v", tileValue(v.dom, "shown"), tileValue(v.dom, "matching"), num(status.body, "records"))
		}
		// Every page follows on: the pages together list every record
		// once, in memory_timeline's order.
		seen := slices.Clone(got)
		next := linkNamed(t, v.dom, "next", pageURL)
		for pages := 1; next != ""; pages++ {
			if pages > 20 {
				t.Fatal("more than 20 pages")
			}
			after := seen[len(seen)-1]
			wantNext, more := timelinePage(t, rest, tok, map[string]any{"within": "all", "after_id": after})
			code, body := getPage(t, http.DefaultClient, next, nil)
			if code != http.StatusOK || !slices.Equal(rowIDs(body), wantNext) || len(wantNext) == 0 {
				t.Fatalf("page %d, %s: %d, rows %v, want memory_timeline from after_id's %v", pages+1, next, code, rowIDs(body), wantNext)
			}
			if slices.Contains(rowIDs(body), after) {
				t.Error("the next page repeats the last row")
			}
			checkPageHTML(t, body)
			seen = append(seen, rowIDs(body)...)
			next = ""
			if more {
				next = linkNamed(t, body, "next", pageURL)
			} else if strings.Contains(body, `id="next"`) {
				t.Errorf("page %d: a next page link on the last page", pages+1)
			}
		}
		distinct := len(slices.Compact(slices.Sorted(slices.Values(seen))))
		if len(seen) != int(num(status.body, "records")) || distinct != len(seen) {
			t.Errorf("the pages list %d records (%d distinct), want memory_status's %v, each once", len(seen), distinct, num(status.body, "records"))
		}
	})

	t.Run("EveryTypeAndStatus", func(t *testing.T) {
		status := rest.call(t, tok, "memory_status", map[string]any{})
		seen := map[string]bool{}
		for _, c := range list(status.body, "counts") {
			typ, stat := str(c, "type"), str(c, "status")
			seen[stat] = true
			want, _ := timelinePage(t, rest, tok, map[string]any{"within": "all", "types": []string{typ}, "statuses": []string{stat}})
			pageURL := base + "records?" + url.Values{"type": {typ}, "status": {stat}}.Encode()
			code, body := getPage(t, http.DefaultClient, pageURL, nil)
			if code != http.StatusOK {
				t.Fatalf("%s: %d", pageURL, code)
			}
			if got := rowIDs(body); !slices.Equal(got, want) || len(got) == 0 {
				t.Errorf("%s %s: rows %v, want memory_timeline's %v", typ, stat, got, want)
			}
			for _, m := range regexp.MustCompile(`data-type="([^"]*)" data-status="([^"]*)"`).FindAllStringSubmatch(body, -1) {
				if m[1] != typ || m[2] != stat {
					t.Errorf("%s %s: a row of %s %s", typ, stat, m[1], m[2])
				}
			}
			if tileValue(body, "matching") != strconv.Itoa(int(num(c, "count"))) {
				t.Errorf("%s %s: matching %q, want memory_status's %v", typ, stat, tileValue(body, "matching"), num(c, "count"))
			}
		}
		if len(seen) != 4 {
			t.Errorf("statuses %v, want all four in the data set", seen)
		}
		// The dashboard's chart links to these lists.
		_, dash := getPage(t, http.DefaultClient, base, nil)
		if !strings.Contains(dash, `<a href="records?status=superseded&amp;type=decision"><rect`) {
			t.Error("the dashboard's type chart does not link to the lists")
		}
	})

	t.Run("Namespace", func(t *testing.T) {
		ns := "gitea/home/ha-config"
		pageURL := base + "records?" + url.Values{"ns": {ns}, "status": {"deleted"}}.Encode()
		want, _ := timelinePage(t, rest, tok, map[string]any{"namespace": ns, "within": "namespace", "statuses": []string{"deleted"}})
		v := openInChromium(t, browser, pageURL, "records-namespace.png", 1400)
		v.checkLoadedAlone(t, pageURL)
		if got := rowIDs(v.dom); !slices.Equal(got, want) || len(got) == 0 {
			t.Errorf("rows %v, want %v", got, want)
		}
		checkDOM(t, v.dom)
		if strings.Count(v.dom, `data-namespace="`+ns+`"`) != len(rowIDs(v.dom)) {
			t.Error("a row from another namespace")
		}
		checkPageHTML(t, v.dom)
	})

	t.Run("Record", func(t *testing.T) {
		want := rest.call(t, tok, "memory_history", map[string]any{"id": id, "limit": 100})
		pageURL := base + "record?id=" + id
		v := openInChromium(t, browser, pageURL, "record.png", 1900)
		v.checkLoadedAlone(t, pageURL)
		checkPageHTML(t, v.dom)
		text := checkDOM(t, v.dom)
		for _, s := range []string{hostileTitle, hostileContent, "url:javascript://alert(1)", `path:"><script>x</script>`, `<b>checked</b> "twice"`} {
			if !strings.Contains(text, s) {
				t.Errorf("the view does not show %q as text", s)
			}
		}
		if title := regexp.MustCompile(`<title>([^<]*)</title>`).FindStringSubmatch(v.dom); title == nil || html.UnescapeString(title[1]) != hostileTitle+" – Hearth" {
			t.Errorf("document title %q", title)
		}
		rec := get(want.body, "record")
		for key, w := range map[string]string{
			"revision": strconv.Itoa(int(num(rec, "revision"))),
			"evidence": fmt.Sprintf("%d / %d", int(num(rec, "proof_count")), int(num(rec, "refutation_count"))),
			"returned": strconv.Itoa(int(num(want.body, "usage", "returned"))),
			"fetched":  strconv.Itoa(int(num(want.body, "usage", "fetched"))),
		} {
			if got := tileValue(v.dom, key); got != w {
				t.Errorf("tile %s = %q, want memory_history's %q", key, got, w)
			}
		}
		if tileValue(v.dom, "fetched") != "1" || tileValue(v.dom, "revision") != "3" {
			t.Errorf("fetched %q revision %q: the data set is not as built", tileValue(v.dom, "fetched"), tileValue(v.dom, "revision"))
		}
		var got, wantRows []string
		for _, m := range regexp.MustCompile(`<tr class="entry"><td class="nw">[^<]*</td><td class="nw">([^<]*)</td><td class="nw"><span[^>]*></span>([^<]*)</td><td>([^<]*)</td>`).FindAllStringSubmatch(v.dom, -1) {
			got = append(got, m[1]+" "+m[2]+" "+m[3])
		}
		for _, e := range list(want.body, "entries") {
			wantRows = append(wantRows, fmt.Sprintf("%s %s %d", str(e, "client"), str(e, "action"), int(num(e, "revision"))))
		}
		if !slices.Equal(got, wantRows) || len(got) != 4 {
			t.Errorf("history rows %q, want memory_history's %q", got, wantRows)
		}
		if n := strings.Count(v.dom, `<circle `); n != 4 {
			t.Errorf("%d points on the revision chart, want 4", n)
		}
		if n := strings.Count(v.dom, `<tr class="stance">`); n != len(list(want.body, "evidence")) || n != 1 {
			t.Errorf("%d stances, want memory_history's %d", n, len(list(want.body, "evidence")))
		}
		// The view read the record without counting a use.
		after := rest.call(t, tok, "memory_history", map[string]any{"id": id})
		if fmt.Sprint(get(after.body, "usage")) != fmt.Sprint(get(want.body, "usage")) {
			t.Errorf("usage moved from %v to %v by the view", get(want.body, "usage"), get(after.body, "usage"))
		}
	})

	t.Run("Search", func(t *testing.T) {
		q := "retry budget"
		want := rest.call(t, tok, "memory_search", map[string]any{"query": q, "within": "all", "limit": 50, "recall": true})
		pageURL := base + "records?" + url.Values{"q": {q}}.Encode()
		v := openInChromium(t, browser, pageURL, "records-search.png", 1600)
		v.checkLoadedAlone(t, pageURL)
		checkPageHTML(t, v.dom)
		checkDOM(t, v.dom)
		got, wantIDs := rowIDs(v.dom), recordIDs(want.body, "hits")
		if len(got) < 3 || !slices.Equal(got, wantIDs) {
			t.Errorf("hits %v, want memory_search's %v", got, wantIDs)
		}
		if want.body["truncated"] == true {
			next := linkNamed(t, v.dom, "next", pageURL)
			more := rest.call(t, tok, "memory_search", map[string]any{"query": q, "within": "all", "limit": 50, "recall": true, "exclude": wantIDs})
			code, body := getPage(t, http.DefaultClient, next, nil)
			if code != http.StatusOK || !slices.Equal(rowIDs(body), recordIDs(more.body, "hits")) {
				t.Errorf("next hits %v, want %v", rowIDs(body), recordIDs(more.body, "hits"))
			}
		}
		hostile := base + "records?" + url.Values{"q": {"alert"}, "ns": {"github/acme/api"}}.Encode()
		code, body := getPage(t, http.DefaultClient, hostile, nil)
		if code != http.StatusOK || !slices.Contains(rowIDs(body), id) || strings.Contains(body, "<script>") {
			t.Errorf("search for the hostile record: %d, rows %v", code, rowIDs(body))
		}
	})

	t.Run("DashboardLinks", func(t *testing.T) {
		_, dash := getPage(t, http.DefaultClient, base, nil)
		checkPageHTML(t, dash)
		m := regexp.MustCompile(`<a href="(record\?id=[0-9A-Z]{26})">`).FindStringSubmatch(dash)
		if m == nil {
			t.Fatal("the latest audit rows link no record")
		}
		if code, _ := getPage(t, http.DefaultClient, base+m[1], nil); code != http.StatusOK {
			t.Errorf("%s: %d", m[1], code)
		}
	})
}
