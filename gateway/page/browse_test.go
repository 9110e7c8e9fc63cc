package page

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-openapiv2/options"
	"github.com/hearth-memory/hearth/gateway/gatewaytest"
	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	xhtml "golang.org/x/net/html"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// These tests drive the record browser against gatewaytest's stand-in
// backend, to see exactly what it asks and to feed it answers a real store
// would refuse to hold (hostile namespaces, ids that are not ids). The
// browser against a real daemon, in Chromium, is in cmd/hearth.

// browseAnswers answers the browser's calls.
type browseAnswers struct {
	status   *hearthv1.StatusResponse
	timeline *hearthv1.TimelineResponse
	search   *hearthv1.SearchResponse
	history  *hearthv1.HistoryResponse
	titles   map[string]string // linked records' titles, by id
	errs     map[string]error
	// perReply, when not 0, makes memory_timeline page timeline's records
	// as the server does (timelineReply); 0 answers timeline itself.
	perReply int
}

// timelineReply answers memory_timeline from a.timeline's records as the
// server pages them: those after after_id (every one when it names none),
// at most limit, and at most perReply, as the records budget cuts a reply,
// with truncated and left_out saying so.
func (a *browseAnswers) timelineReply(req *hearthv1.TimelineRequest) *hearthv1.TimelineResponse {
	if a.perReply == 0 {
		return a.timeline
	}
	recs := a.timeline.GetRecords()
	for i, r := range recs {
		if r.GetId() == req.GetAfterId() {
			recs = recs[i+1:]
			break
		}
	}
	asked := min(len(recs), int(req.GetLimit()))
	n := min(asked, a.perReply)
	return &hearthv1.TimelineResponse{Records: recs[:n], Truncated: n < asked, LeftOut: uint32(asked - n)}
}

func (a *browseAnswers) respond(method string, req proto.Message) (proto.Message, error) {
	name := method[strings.LastIndex(method, "/")+1:]
	if err := a.errs[name]; err != nil {
		return nil, err
	}
	switch name {
	case "Status":
		return a.status, nil
	case "Timeline":
		return a.timelineReply(req.(*hearthv1.TimelineRequest)), nil
	case "Search":
		return a.search, nil
	case "History":
		// A linked record's title is read with memory_history too.
		if t, ok := a.titles[req.(*hearthv1.HistoryRequest).GetId()]; ok {
			return &hearthv1.HistoryResponse{Record: &hearthv1.Record{Id: req.(*hearthv1.HistoryRequest).GetId(), Title: t}}, nil
		}
		return a.history, nil
	case "Namespace":
		return &hearthv1.NamespaceResponse{Namespace: req.(*hearthv1.NamespaceRequest).GetName(),
			Scopes: []string{req.(*hearthv1.NamespaceRequest).GetName(), "projects/acme", "global"}}, nil
	}
	return nil, status.Error(codes.Unimplemented, "not in this test")
}

const (
	id1 = "01JD3M5ZK9Q8W7E6R5T4Y3X2V1"
	id2 = "01JD3M5ZK9Q8W7E6R5T4Y3X2V2"
	id3 = "01JD3M5ZK9Q8W7E6R5T4Y3X2V3"
)

func rec(id, ns, typ, st, title string, at time.Time) *hearthv1.Record {
	return &hearthv1.Record{Id: id, Namespace: ns, Type: typ, Status: st, Title: title, Content: "Content of " + title,
		Revision: 2, Writer: "codex", Confidence: 0.8, EffectiveConfidence: 0.8, Source: "store",
		CreatedAt: timestamppb.New(at), UpdatedAt: timestamppb.New(at)}
}

func baseBrowse() *browseAnswers {
	return &browseAnswers{
		status: &hearthv1.StatusResponse{
			Records: 9,
			Counts: []*hearthv1.TypeStatusCount{
				{Type: "decision", Status: "active", Count: 5}, {Type: "note", Status: "candidate", Count: 2},
				{Type: "note", Status: "active", Count: 2}, {Type: "note", Status: "deleted", Count: 4},
			},
			Namespaces: []*hearthv1.NamespaceCount{{Namespace: "global", Records: 2}, {Namespace: "github/acme/api", Records: 7}},
		},
		timeline: &hearthv1.TimelineResponse{Records: []*hearthv1.Record{
			rec(id3, "github/acme/api", "decision", "active", "Retries are capped", testNow.Add(-time.Hour)),
			rec(id2, "global", "note", "candidate", "Prefer tabs", testNow.Add(-2*time.Hour)),
		}},
		search: &hearthv1.SearchResponse{Ranking: "fts", Hits: []*hearthv1.SearchHit{
			{Id: id3, Namespace: "github/acme/api", Type: "decision", Status: "active", Title: "Retries are capped", Snippet: "three [retries]", Score: 1.5},
			{Id: id2, Namespace: "global", Type: "note", Status: "candidate", Title: "Prefer tabs", Snippet: "tabs", Score: 0.5},
		}},
		history: &hearthv1.HistoryResponse{
			Record: func() *hearthv1.Record {
				r := rec(id1, "github/acme/api", "decision", "superseded", "Old retry rule", testNow.Add(-48*time.Hour))
				r.Revision, r.ProofCount, r.RefutationCount, r.EffectiveConfidence = 3, 1, 1, 0.6667
				r.SupersededBy, r.Topics = id3, []string{"http"}
				r.Anchors = []*hearthv1.Anchor{{Anchor: "path:src/retry.go", State: "available", CheckedAt: timestamppb.New(testNow.Add(-time.Hour))}, {Anchor: "host:db1", State: "unknown"}}
				return r
			}(),
			Entries: []*hearthv1.HistoryEntry{
				{At: timestamppb.New(testNow.Add(-time.Hour)), Client: "claude-code", Action: "supersede", Revision: 3, Detail: "superseded by " + id3},
				{At: timestamppb.New(testNow.Add(-20 * time.Hour)), Client: "codex", Action: "evidence", Revision: 2, Detail: "corroborates: checked"},
				{At: timestamppb.New(testNow.Add(-48 * time.Hour)), Client: "claude-code", Action: "store", Revision: 1, Detail: "decision active"},
			},
			TotalEntries: 3,
			Evidence:     []*hearthv1.HistoryStance{{Client: "codex", Stance: "corroborates", Note: "checked", At: timestamppb.New(testNow.Add(-20 * time.Hour))}},
			Usage:        &hearthv1.RecordUsage{Returned: 4, Fetched: 1, LastReturnedAt: timestamppb.New(testNow.Add(-3 * time.Hour))},
		},
		errs: map[string]error{},
	}
}

// browse serves target (a path with its query) to the ingress proxy.
func browse(t *testing.T, a *browseAnswers, target string) (rendered, *gatewaytest.Backend) {
	t.Helper()
	b := gatewaytest.New(t, a.respond)
	cfg := Config{Conn: b.Conn, Token: "hearth_pagetoken", Now: func() time.Time { return testNow },
		API: netip.MustParseAddrPort("127.0.0.1:8765")}
	r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8099"+target, nil)
	r.RemoteAddr = IngressProxy.String() + ":50000"
	w := httptest.NewRecorder()
	Guard(IngressAllowed, New(cfg)).ServeHTTP(w, r)
	body, _ := io.ReadAll(w.Result().Body)
	return rendered{code: w.Code, hdr: w.Header(), html: string(body)}, b
}

// callOf returns the one request of the method named, failing otherwise.
func callOf[T proto.Message](t *testing.T, b *gatewaytest.Backend, name string) T {
	t.Helper()
	var out []T
	for _, c := range b.Calls() {
		if strings.HasSuffix(c.Method, "/"+name) {
			out = append(out, c.Request.(T))
			if got := c.Metadata.Get("authorization"); len(got) != 1 || got[0] != "Bearer hearth_pagetoken" {
				t.Errorf("%s: authorization %q, want the page's token", name, got)
			}
		}
	}
	if len(out) != 1 {
		var zero T
		t.Fatalf("%d %s calls, want 1", len(out), name)
		return zero
	}
	return out[0]
}

func calledNot(t *testing.T, b *gatewaytest.Backend, name string) {
	t.Helper()
	for _, c := range b.Calls() {
		if strings.HasSuffix(c.Method, "/"+name) {
			t.Errorf("%s was called", name)
		}
	}
}

func TestBrowser_List(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		r, b := browse(t, baseBrowse(), "/records")
		if r.code != http.StatusOK {
			t.Fatalf("status %d: %s", r.code, r.html)
		}
		req := callOf[*hearthv1.TimelineRequest](t, b, "Timeline")
		if req.GetWithin() != "all" || req.GetNamespace() != "" || req.GetLimit() != listRows || req.GetTypes() != nil || req.GetStatuses() != nil || req.GetAfterId() != "" {
			t.Errorf("timeline request %v, want every namespace, limit %d, no filters", req, listRows)
		}
		if max := fieldLimit(&hearthv1.TimelineRequest{}, "limit", func(o *options.JSONSchema) float64 { return o.GetMaximum() }); listRows > max {
			t.Errorf("a page of %d records, more than memory_timeline's limit %v", listRows, max)
		}
		calledNot(t, b, "Search")
		wantContains(t, r.html,
			`<tr class="rec" data-id="`+id3+`" data-type="decision" data-status="active" data-namespace="github/acme/api">`,
			`<a href="record?id=`+id3+`">Retries are capped</a>`, `<div class="snippet">Content of Retries are capped</div>`,
			`<a href="records?ns=github%2Facme%2Fapi">github/acme/api</a>`,
			`<td class="nw">2026-11-30 13:20</td><td>2</td><td class="nw">codex</td>`,
			`id="tile-shown"><b>2</b><span>records on this page</span><small>every namespace</small>`,
			`id="tile-matching"><b>9</b>`, // every status but deleted
			`<option value="github/acme/api">github/acme/api</option>`, `<option value="" selected>every namespace</option>`,
			`<option value="summary">summary</option>`, `<option value="deleted">deleted</option>`,
		)
		if strings.Contains(r.html, `id="next"`) {
			t.Error("a next page link on the last page")
		}
		if r.hdr.Get("Cache-Control") != "no-store" || !strings.Contains(r.hdr.Get("Content-Security-Policy"), "form-action 'self'") {
			t.Errorf("headers %v", r.hdr)
		}
		checkSelfContained(t, r.html)
	})
	t.Run("OKFilters", func(t *testing.T) {
		r, b := browse(t, baseBrowse(), "/records?ns=github%2Facme%2Fapi&type=note&status=deleted&after="+id1)
		req := callOf[*hearthv1.TimelineRequest](t, b, "Timeline")
		if req.GetWithin() != "namespace" || req.GetNamespace() != "github/acme/api" || !slices.Equal(req.GetTypes(), []string{"note"}) ||
			!slices.Equal(req.GetStatuses(), []string{"deleted"}) || req.GetAfterId() != id1 {
			t.Errorf("timeline request %v", req)
		}
		wantContains(t, r.html, `<option value="github/acme/api" selected>`, `<option value="note" selected>`, `<option value="deleted" selected>`,
			`in github/acme/api alone`, `<a href="records?ns=github%2Facme%2Fapi&amp;status=deleted&amp;type=note" id="first">`)
		if strings.Contains(r.html, `id="tile-matching"`) {
			t.Error("a matching figure memory_status cannot tell (one namespace by type)")
		}
	})
	t.Run("OKMatchingByTypeAndStatus", func(t *testing.T) {
		r, _ := browse(t, baseBrowse(), "/records?type=note&status=deleted")
		wantContains(t, r.html, `id="tile-matching"><b>4</b>`)
		r, _ = browse(t, baseBrowse(), "/records?type=note")
		wantContains(t, r.html, `id="tile-matching"><b>4</b>`) // 2 candidate + 2 active, not the deleted
		r, _ = browse(t, baseBrowse(), "/records?ns=global")
		wantContains(t, r.html, `id="tile-matching"><b>2</b>`)
	})
	t.Run("OKChain", func(t *testing.T) {
		r, b := browse(t, baseBrowse(), "/records?ns=github%2Facme%2Fapi&chain=1")
		req := callOf[*hearthv1.TimelineRequest](t, b, "Timeline")
		if req.GetWithin() != "chain" || req.GetNamespace() != "github/acme/api" {
			t.Errorf("timeline request %v, want the chain of github/acme/api", req)
		}
		if n := callOf[*hearthv1.NamespaceRequest](t, b, "Namespace"); n.GetName() != "github/acme/api" {
			t.Errorf("namespace request %v", n)
		}
		wantContains(t, r.html, "in github/acme/api and its scope chain: github/acme/api → projects/acme → global", `name="chain" value="1" checked`)
	})
	t.Run("OKPages", func(t *testing.T) {
		// 120 records, 14 a reply (what the records budget holds of
		// short ones): pages of 50, 50 and 20, each from the replies asked
		// one after the other.
		a := baseBrowse()
		a.timeline, a.perReply = &hearthv1.TimelineResponse{}, 14
		var ids []string
		for i := range 120 {
			id := fmt.Sprintf("01JD3M5ZK9Q8W7E6R5T4Y3%04d", i)
			ids = append(ids, id)
			a.timeline.Records = append(a.timeline.Records, rec(id, "global", "decision", "active", "Record "+itoa(i), testNow.Add(-time.Duration(i)*time.Minute)))
		}
		rowRE := regexp.MustCompile(`<tr class="rec" data-id="([^"]*)"`)
		after := ""
		for _, want := range [][]string{ids[:50], ids[50:100], ids[100:]} {
			target := "/records?type=decision"
			if after != "" {
				target = "/records?after=" + after + "&type=decision"
			}
			r, b := browse(t, a, target)
			var rows []string
			for _, m := range rowRE.FindAllStringSubmatch(r.html, -1) {
				rows = append(rows, m[1])
			}
			if !slices.Equal(rows, want) {
				t.Errorf("%s: rows %v,\nwant %v", target, rows, want)
			}
			// Each reply is asked from the last record of the one before,
			// for what the page still lacks.
			from, have := after, 0
			for _, c := range b.Calls() {
				req, ok := c.Request.(*hearthv1.TimelineRequest)
				if !ok {
					continue
				}
				if req.GetAfterId() != from || req.GetLimit() != uint32(listRows-have) || !slices.Equal(req.GetTypes(), []string{"decision"}) {
					t.Errorf("%s: timeline request %v, want after %s, limit %d", target, req, from, listRows-have)
				}
				have = min(have+a.perReply, len(want))
				from = want[have-1]
			}
			wantContains(t, r.html, `id="tile-shown"><b>`+itoa(len(want))+`</b>`)
			next := `<a href="records?after=` + want[len(want)-1] + `&amp;type=decision" id="next">next page »</a>`
			if len(want) == listRows {
				wantContains(t, r.html, next)
			} else if strings.Contains(r.html, `id="next"`) {
				t.Errorf("%s: a next page link on the last page", target)
			}
			checkSelfContained(t, r.html)
			after = want[len(want)-1]
		}
	})
	t.Run("OKNone", func(t *testing.T) {
		a := baseBrowse()
		a.timeline = &hearthv1.TimelineResponse{}
		r, _ := browse(t, a, "/records?status=superseded")
		wantContains(t, r.html, `id="records-none">No records match.`)
	})
	t.Run("ErrTimeline", func(t *testing.T) {
		a := baseBrowse()
		a.errs["Timeline"] = status.Error(codes.InvalidArgument, "types[0]: must be decision, constraint, requirement, procedure, preference, note or summary")
		a.errs["Status"] = status.Error(codes.Unavailable, "down")
		r, _ := browse(t, a, "/records?type=memo")
		if r.code != http.StatusOK {
			t.Fatalf("status %d", r.code)
		}
		wantContains(t, r.html, `id="records-error">memory_timeline failed: InvalidArgument: types[0]: must be`,
			"memory_status failed: Unavailable: down", `<option value="" selected>every namespace</option>`)
		checkSelfContained(t, r.html)
	})
}

func TestBrowser_Search(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		r, b := browse(t, baseBrowse(), "/records?q=+retry+budget+&type=decision")
		req := callOf[*hearthv1.SearchRequest](t, b, "Search")
		if req.GetQuery() != "retry budget" || req.GetWithin() != "all" || req.GetNamespace() != "" || !req.GetRecall() ||
			req.GetLimit() != searchLimit || !slices.Equal(req.GetTypes(), []string{"decision"}) {
			t.Errorf("search request %v, want every namespace, recall (not a question asked), the limit", req)
		}
		calledNot(t, b, "Timeline")
		wantContains(t, r.html, `Search results for “retry budget”`, `value="retry budget"`,
			`<a href="record?id=`+id3+`">Retries are capped</a><div class="snippet">three [retries]</div>`,
			`<td class="nw">1.5</td>`, "Ranked by fts.", "Hits found here count as returned")
		if strings.Contains(r.html, `id="tile-matching"`) || strings.Contains(r.html, `id="next"`) {
			t.Error("a matching figure or next link for a complete search")
		}
		checkSelfContained(t, r.html)
	})
	t.Run("OKNamespaceAndStatus", func(t *testing.T) {
		r, b := browse(t, baseBrowse(), "/records?q=tabs&ns=global&status=candidate")
		req := callOf[*hearthv1.SearchRequest](t, b, "Search")
		if req.GetWithin() != "namespace" || req.GetNamespace() != "global" {
			t.Errorf("search request %v", req)
		}
		if strings.Contains(r.html, `data-id="`+id3+`"`) || !strings.Contains(r.html, `data-id="`+id2+`"`) {
			t.Error("the status filter does not keep candidates only")
		}
		wantContains(t, r.html, "1 hits of other statuses are not shown.")
	})
	t.Run("OKNextPageExcludesShown", func(t *testing.T) {
		a := baseBrowse()
		a.search.Truncated, a.search.LeftOut = true, 30
		r, b := browse(t, a, "/records?q=retry&x="+id1)
		if req := callOf[*hearthv1.SearchRequest](t, b, "Search"); !slices.Equal(req.GetExclude(), []string{id1}) {
			t.Errorf("exclude %v, want the hits of earlier pages", req.GetExclude())
		}
		next := "records?" + url.Values{"q": {"retry"}, "x": {id1, id3, id2}}.Encode()
		wantContains(t, r.html, `<a href="`+strings.ReplaceAll(next, "&", "&amp;")+`" id="next">`,
			`<a href="records?q=retry" id="first">`, "30 more hits continue on the next page.")
	})
	t.Run("OKTooDeep", func(t *testing.T) {
		a := baseBrowse()
		a.search.Truncated = true
		target := "/records?q=retry"
		for i := 0; i < maxExcludeIDs-1; i++ {
			target += "&x=" + id1
		}
		r, _ := browse(t, a, target)
		if strings.Contains(r.html, `id="next"`) {
			t.Error("a next link past memory_search's exclude limit")
		}
		wantContains(t, r.html, "More hits exist than the page can page through (100): narrow the search.")
	})
	t.Run("ErrStatusNotSearchable", func(t *testing.T) {
		r, b := browse(t, baseBrowse(), "/records?q=retry&status=deleted")
		calledNot(t, b, "Search")
		wantContains(t, r.html, `Search finds active and candidate records only: clear the search to list deleted records.`)
	})
}

func TestBrowser_Record(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		a := baseBrowse()
		a.titles = map[string]string{id3: "New retry rule"}
		r, b := browse(t, a, "/record?id="+id1)
		if r.code != http.StatusOK {
			t.Fatalf("status %d", r.code)
		}
		// The record's history, then its successor's title (issue 42: a
		// title where a bare id stood).
		var hist []*hearthv1.HistoryRequest
		for _, c := range b.Calls() {
			if strings.HasSuffix(c.Method, "/History") {
				hist = append(hist, c.Request.(*hearthv1.HistoryRequest))
			}
		}
		if len(hist) != 2 || hist[0].GetId() != id1 || hist[0].GetLimit() != historyLimit || hist[1].GetId() != id3 || hist[1].GetLimit() != 1 {
			t.Errorf("history requests %v, want the record's and its successor's", hist)
		}
		calledNot(t, b, "Get") // memory_get would count the view as a use
		wantContains(t, r.html,
			`<title>Old retry rule – Hearth</title>`, `<h2 id="record-title">Old retry rule</h2>`,
			`<pre class="content" id="record-content">Content of Old retry rule</pre>`,
			`id="record-status"><span class="dot" style="background: #7d8fd6"></span>superseded</span>`,
			`<dt>superseded by</dt><dd><a href="record?id=`+id3+`">New retry rule</a> <span class="mono small muted">`+id3+`</span></dd>`,
			`<span class="pill topic">http</span>`,
			`id="tile-revision"><b>3</b>`, `id="tile-confidence"><b>0.67</b><span>confidence</span><small>asserted 0.80</small>`,
			`id="tile-evidence"><b>1 / 1</b>`, `id="tile-returned"><b>4</b><span>returned</span><small>last 2026-11-30 11:20 UTC</small>`,
			`id="tile-fetched"><b>1</b><span>fetched</span><small>never</small>`,
			`<td class="mono wrap">path:src/retry.go</td><td class="nw"><span class="dot" style="background: #4fb89a"></span>available</td><td class="nw">2026-11-30 13:20 UTC</td>`,
			`<td class="mono wrap">host:db1</td><td class="nw"><span class="dot" style="background: #8b95a5"></span>unknown</td><td class="nw">never</td>`,
			`<tr class="stance"><td class="nw">codex</td><td class="nw"><span class="dot" style="background: #4fb89a"></span>corroborates</td><td class="wrap">checked</td>`,
			`<td class="nw">claude-code</td><td class="nw"><span class="dot" style="background: #7d8fd6"></span>supersede</td><td>3</td><td class="wrap">superseded by `+id3+`</td>`,
			`data-max="3"`, `data-revision="1"`, `data-revision="2"`, `data-revision="3"`, "store</text>", "evidence</text>", "supersede</text>",
		)
		if strings.Contains(r.html, `id="entries-note"`) {
			t.Error("an entries note when every row is shown")
		}
		checkSelfContained(t, r.html)
	})
	t.Run("OKTruncated", func(t *testing.T) {
		a := baseBrowse()
		a.history.TotalEntries, a.history.Truncated, a.history.LeftOut = 40, true, 37
		r, _ := browse(t, a, "/record?id="+id1)
		wantContains(t, r.html, `id="entries-note">3 of 40 audit rows, the newest, are shown (memory_history packs them into the 2,000-token records budget on top of the record).`)
	})
	t.Run("OKPurged", func(t *testing.T) {
		a := baseBrowse()
		a.history.Record, a.history.Evidence, a.history.Usage = nil, nil, nil
		r, _ := browse(t, a, "/record?id="+id1)
		wantContains(t, r.html, `id="record-purged"`, `<h2 id="record-title">Purged record</h2>`, `class="entry"`)
		for _, s := range []string{`id="anchors"`, `id="evidence"`, `id="tile-revision"`} {
			if strings.Contains(r.html, s) {
				t.Errorf("a purged record shows %s", s)
			}
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		a := baseBrowse()
		a.errs["History"] = status.Error(codes.NotFound, "id: no record has this id")
		r, _ := browse(t, a, "/record?id="+id1)
		if r.code != http.StatusNotFound {
			t.Errorf("status %d, want 404", r.code)
		}
		wantContains(t, r.html, `id="record-error">memory_history failed: NotFound: id: no record has this id`, `<a href="records">Back to the records</a>`)
		checkSelfContained(t, r.html)
	})
	t.Run("ErrBadID", func(t *testing.T) {
		a := baseBrowse()
		a.errs["History"] = status.Error(codes.InvalidArgument, "id: is not a record id")
		r, _ := browse(t, a, `/record?id=%22%3E%3Cscript%3Ealert(1)%3C/script%3E`)
		if r.code != http.StatusBadRequest {
			t.Errorf("status %d, want 400", r.code)
		}
		if strings.Contains(r.html, "<script>") {
			t.Error("the id is echoed unescaped")
		}
		wantContains(t, r.html, `<code>&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;</code>`)
		checkSelfContained(t, r.html)
	})
}

// hostile holds user text built to break out of every context the browser
// writes it in: element content, attribute values, URLs and CSS.
var hostile = []string{
	`<script>alert("t")</script>`,
	`"><img src=x onerror=alert(1)>`,
	`javascript:alert(1)`,
	`' onmouseover='alert(1)`,
	`</style><style>body{background:url(//evil.example)}</style>`,
}

// TestBrowser_Escaped feeds hostile text in every field the browser shows
// (titles, content, snippets, namespaces, anchors, topics, notes, clients,
// audit details, ids) and checks that each comes out as text: no element,
// attribute, link or style of its own.
func TestBrowser_Escaped(t *testing.T) {
	t.Parallel()
	h := strings.Join(hostile, " ")
	a := baseBrowse()
	a.status.Namespaces = append(a.status.Namespaces, &hearthv1.NamespaceCount{Namespace: h, Records: 1})
	for _, r := range a.timeline.Records {
		r.Title, r.Content, r.Namespace, r.Writer, r.Type, r.Status = h, h, h, h, h, h
	}
	a.timeline.Records[0].Id = h
	for _, hit := range a.search.Hits {
		hit.Title, hit.Snippet, hit.Namespace, hit.Id = h, h, h, h
	}
	hr := a.history.Record
	hr.Title, hr.Content, hr.Namespace, hr.Writer, hr.Source, hr.Topics = h, h, h, h, h, []string{h}
	hr.Supersedes, hr.SupersededBy = h, "javascript:alert(1)"
	hr.Anchors = []*hearthv1.Anchor{{Anchor: "url:javascript:alert(1)", State: h}}
	a.history.Evidence[0].Client, a.history.Evidence[0].Note, a.history.Evidence[0].Stance = h, h, h
	for _, e := range a.history.Entries {
		e.Client, e.Action, e.Detail = h, h, h
	}
	for _, target := range []string{"/records", "/records?q=x", "/record?id=" + id1, "/records?ns=" + url.QueryEscape(h) + "&q=" + url.QueryEscape(h)} {
		t.Run(target, func(t *testing.T) {
			r, _ := browse(t, a, target)
			if r.code != http.StatusOK {
				t.Fatalf("status %d", r.code)
			}
			text := checkMarkup(t, r.html)
			if !strings.Contains(text, hostile[0]) || !strings.Contains(text, hostile[1]) {
				t.Error("the hostile text is not shown as text")
			}
		})
	}
}

// TestGuard_BrowserPaths: the browser's two paths are served, GET only;
// anything under them is not.
func TestGuard_BrowserPaths(t *testing.T) {
	t.Parallel()
	g := Guard(IngressAllowed, okHandler())
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/records", 200},
		{"HEAD", "/records?q=x", 200},
		{"GET", "/record?id=" + id1, 200},
		{"POST", "/records", 405},
		{"GET", "/records/", 404},
		{"GET", "/record/" + id1, 404},
		{"GET", "/Records", 404},
	} {
		r := httptest.NewRequest(tc.method, "http://127.0.0.1:8099"+tc.path, nil)
		r.RemoteAddr = "127.0.0.1:5000"
		w := httptest.NewRecorder()
		g.ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, w.Code, tc.want)
		}
	}
}

// markupElements are the elements the page writes.
var markupElements = map[string]bool{
	"html": true, "head": true, "body": true, "meta": true, "title": true, "link": true, "style": true,
	"header": true, "h1": true, "h2": true, "h3": true, "nav": true, "section": true, "div": true, "p": true,
	"span": true, "b": true, "small": true, "a": true, "code": true, "pre": true, "dl": true, "dt": true, "dd": true,
	"table": true, "tbody": true, "tr": true, "th": true, "td": true,
	"form": true, "label": true, "input": true, "select": true, "option": true, "button": true,
	"svg": true, "g": true, "text": true, "rect": true, "line": true, "polyline": true, "circle": true,
}

// styleAttr is the one inline style the page writes: a status colour.
var styleAttr = regexp.MustCompile(`^background: #[0-9a-f]{6}$`)

// checkMarkup parses a view as a browser does and fails on any element,
// attribute, link or style the page does not write itself: user
// text that escaped its context would show up as one. It returns the
// view's text, unescaped, so a test can see user text arrive as text.
func checkMarkup(t *testing.T, page string) string {
	t.Helper()
	doc, err := xhtml.Parse(strings.NewReader(page))
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
			if !markupElements[n.Data] {
				t.Errorf("element <%s>", n.Data)
			}
			if n.Data == "style" {
				styles++
			}
			for _, a := range n.Attr {
				switch k := strings.ToLower(a.Key); {
				case strings.HasPrefix(k, "on"), k == "src", k == "srcset", k == "formaction", k == "xlink:href":
					t.Errorf("<%s %s=%q>", n.Data, a.Key, a.Val)
				case k == "href" && !pageLink.MatchString(a.Val):
					t.Errorf("<%s href=%q>: not one of the page's links", n.Data, a.Val)
				case k == "action" && a.Val != "records":
					t.Errorf("<form action=%q>", a.Val)
				case k == "method" && a.Val != "get":
					t.Errorf("<form method=%q>", a.Val)
				case k == "style" && !styleAttr.MatchString(a.Val):
					t.Errorf("<%s style=%q>", n.Data, a.Val)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if styles != 1 {
		t.Errorf("%d style elements, want the page's one", styles)
	}
	return text.String()
}

// TestBrowser_LinksStayUnderIngress resolves every link and form action of
// every view as a browser does under Home Assistant's ingress path: each
// must land on one of the page's own paths under that prefix.
func TestBrowser_LinksStayUnderIngress(t *testing.T) {
	t.Parallel()
	const prefix = "/api/hassio_ingress/AbC123/"
	dash, _ := render(t, baseAnswers(), Config{})
	views := map[string]string{prefix: dash.html}
	for _, target := range []string{"/records", "/records?q=retry", "/record?id=" + id1} {
		r, _ := browse(t, baseBrowse(), target)
		views[prefix+strings.TrimPrefix(target, "/")] = r.html
	}
	links := regexp.MustCompile(`\s(?:href|action)="([^"]*)"`)
	checked := 0
	for at, page := range views {
		base, _ := url.Parse("http://homeassistant.local:8123" + at)
		for _, m := range links.FindAllStringSubmatch(page, -1) {
			ref, err := url.Parse(html.UnescapeString(m[1]))
			if err != nil {
				t.Errorf("%s: link %q: %v", at, m[1], err)
				continue
			}
			if ref.Scheme == "data" {
				continue
			}
			u := base.ResolveReference(ref)
			rest, ok := strings.CutPrefix(u.Path, prefix)
			if u.Host != base.Host || !ok || !servedPaths["/"+rest] {
				t.Errorf("%s: link %q goes to %s", at, m[1], u)
			}
			checked++
		}
	}
	if checked < 20 {
		t.Errorf("checked %d links", checked)
	}
}

// BenchmarkBrowser renders the records view (a full page of 100 records)
// and the record view (100 audit rows) from the stand-in backend.
func BenchmarkBrowser(b *testing.B) {
	a := baseBrowse()
	a.timeline.Records = nil
	a.history.Entries = nil
	for i := range 100 {
		at := testNow.Add(-time.Duration(i) * time.Hour)
		a.timeline.Records = append(a.timeline.Records, rec(id1, "github/acme/api", "decision", "active", "A record title of some length "+strconv.Itoa(i), at))
		a.history.Entries = append(a.history.Entries, &hearthv1.HistoryEntry{At: timestamppb.New(at), Client: "codex", Action: "update", Revision: uint32(101 - i), Detail: "changed confidence (0.80→0.70)"})
	}
	backend := gatewaytest.New(b, a.respond)
	h := Guard(IngressAllowed, New(Config{Conn: backend.Conn, Token: "t", Now: func() time.Time { return testNow }}))
	for name, target := range map[string]string{"records": "/records", "record": "/record?id=" + id1} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8099"+target, nil)
				r.RemoteAddr = "127.0.0.1:50000"
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}

// FuzzBrowser feeds arbitrary query strings, as a visitor can type them, to
// both browser views: neither may fail, and whatever comes back holds no
// markup the page did not write.
func FuzzBrowser(f *testing.F) {
	for _, s := range []string{
		"q=retry&ns=global&type=note&status=active",
		"id=" + id1,
		"q=%3Cscript%3E&ns=%22%3E%3Cimg+src%3Dx%3E&chain=1&after=javascript:alert(1)",
		"x=a&x=b&x=%00&q=%E2%80%AE",
		"ns=records%3Fns%3D&type=%27%20onmouseover%3D%27x",
		"%zz=1&q=;;&&",
	} {
		f.Add(s)
	}
	a := baseBrowse()
	backend := gatewaytest.New(f, a.respond)
	h := Guard(IngressAllowed, New(Config{Conn: backend.Conn, Token: "t", Now: func() time.Time { return testNow }}))
	f.Fuzz(func(t *testing.T, query string) {
		for _, path := range []string{"/records", "/record"} {
			r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8099"+path, nil)
			r.URL.RawQuery = query
			r.RemoteAddr = "127.0.0.1:50000"
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				t.Fatalf("%s?%s: status %d", path, query, w.Code)
			}
			checkMarkup(t, w.Body.String())
		}
	})
}
