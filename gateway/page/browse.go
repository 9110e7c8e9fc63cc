package page

import (
	"context"
	_ "embed"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-openapiv2/options"
	"github.com/hearth-memory/hearth/gateway"
	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The record browser: GET records lists records newest first
// (memory_timeline) or searches them (memory_search), filtered by
// namespace, type and status; GET record?id= shows one record with its
// revision history, evidence, anchors and usage (memory_history). Like the
// dashboard it asks the services over the daemon's connection as
// ClientName and has no query path of its own; its search box is a GET
// form, so nothing is ever posted.

// The browser's paths, relative to the page's root; links to them are
// written without the leading '/' (records, record?id=…).
const (
	recordsPath = "/records"
	recordPath  = "/record"
)

// servedPaths are the paths Guard lets through.
var servedPaths = map[string]bool{"/": true, recordsPath: true, recordPath: true}

// listRows is how many records a page of the list shows. One
// memory_timeline reply holds what fits its records budget, about 14
// records (issue 42); the list asks again after the last one until it
// has listRows, or the records end.
const listRows = 50

// The browser asks for as much as the services allow and lets their
// budgets decide how much a reply holds: the limits are the requests'
// maxima, read from the same proto options the server enforces.
var (
	searchLimit   = uint32(fieldLimit(&hearthv1.SearchRequest{}, "limit", func(o *options.JSONSchema) float64 { return o.GetMaximum() }))
	historyLimit  = uint32(fieldLimit(&hearthv1.HistoryRequest{}, "limit", func(o *options.JSONSchema) float64 { return o.GetMaximum() }))
	maxExcludeIDs = int(fieldLimit(&hearthv1.SearchRequest{}, "exclude", func(o *options.JSONSchema) float64 { return float64(o.GetMaxItems()) }))

	// recordTypes and recordStatuses are the closed sets the timeline's
	// filters accept.
	recordTypes    = fieldEnum(&hearthv1.TimelineRequest{}, "types")
	recordStatuses = fieldEnum(&hearthv1.TimelineRequest{}, "statuses")
)

// fieldSchema returns the openapiv2_field options of a request field,
// panicking when there are none: the page must not start without them.
func fieldSchema(msg proto.Message, field protoreflect.Name) *options.JSONSchema {
	fd := msg.ProtoReflect().Descriptor().Fields().ByName(field)
	if fd == nil {
		panic("page: no field " + string(field))
	}
	o, _ := proto.GetExtension(fd.Options(), options.E_Openapiv2Field).(*options.JSONSchema)
	if o == nil {
		panic("page: field " + string(field) + " declares no limits")
	}
	return o
}

func fieldLimit(msg proto.Message, field protoreflect.Name, get func(*options.JSONSchema) float64) float64 {
	v := get(fieldSchema(msg, field))
	if v <= 0 {
		panic("page: field " + string(field) + " declares no such limit")
	}
	return v
}

func fieldEnum(msg proto.Message, field protoreflect.Name) []string {
	e := fieldSchema(msg, field).GetEnum()
	if len(e) == 0 {
		panic("page: field " + string(field) + " declares no enum")
	}
	return e
}

// idPattern is a record id; the page links only what matches it.
var idPattern = regexp.MustCompile(`^[0-9A-HJKMNP-TV-Z]{26}$`)

// recordHref links a record view, or "" when id is not a record id.
func recordHref(id string) string {
	if !idPattern.MatchString(id) {
		return ""
	}
	return "record?id=" + id
}

// setHeaders sets the headers every page view carries. The views show
// tokens (the dashboard) and user text: never store them, never send them
// elsewhere, and let nothing but inline styles and data: images load;
// forms (the search box, a GET) may submit to the page only.
func setHeaders(hd http.Header) {
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'self'; frame-ancestors 'self'")
}

// serveBrowser serves the records and record views.
func (h *Handler) serveBrowser(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	ctx = gateway.WithBearer(ctx, h.cfg.Token)
	now := h.cfg.Now()
	var buf htmlWriter
	code := http.StatusOK
	if r.URL.Path == recordPath {
		rv := h.recordView(ctx, r.URL.Query().Get("id"), now)
		writeRecord(&buf, rv)
		code = rv.Code
	} else {
		writeRecords(&buf, h.recordsView(ctx, parseFilter(r.URL.Query()), now))
	}
	setHeaders(w.Header())
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}

// filter is what the records view is asked for, as its query string holds
// it: q (search text), ns (a namespace; none: every namespace), chain (with
// ns: its scope chain too), type, status (none: every status but deleted),
// after (the last record id of the previous page) and x (search hits
// already shown, left out of the next page of hits).
type filter struct {
	Q, NS, Type, Status string
	Chain               bool
	After               string
	Exclude             []string
}

func parseFilter(q url.Values) filter {
	return filter{
		Q: strings.TrimSpace(q.Get("q")), NS: q.Get("ns"), Chain: q.Get("chain") == "1",
		Type: q.Get("type"), Status: q.Get("status"), After: q.Get("after"), Exclude: q["x"],
	}
}

// href returns the records view for f.
func (f filter) href() string {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("q", f.Q)
	set("ns", f.NS)
	if f.Chain && f.NS != "" {
		v.Set("chain", "1")
	}
	set("type", f.Type)
	set("status", f.Status)
	set("after", f.After)
	for _, x := range f.Exclude {
		v.Add("x", x)
	}
	if len(v) == 0 {
		return "records"
	}
	return "records?" + v.Encode()
}

// option is one choice of a select.
type option struct {
	Value, Label string
	Selected     bool
}

// browseView is what the records view shows.
type browseView struct {
	Title, Now string
	F          filter

	Namespaces, Types, Statuses []option

	// Search is set when F.Q asks for a search rather than a list.
	Search bool
	// Scope says where the list or search looked.
	Scope string
	// Matching is how many records the filters select, by memory_status,
	// when its counts can tell ("" otherwise).
	Matching string
	Err      string
	Rows     []recordRow
	// Next continues the list or the search; First starts it over.
	Next, First string
	Notes       []string
}

// recordRow is one record of the list or one search hit.
type recordRow struct {
	ID, Href, Title, Namespace, NSHref string
	Type, Status, Color                string
	Created, Revision, Writer          string
	Snippet, Score                     string
}

const dayLayout = "2006-01-02 15:04"

func (h *Handler) recordsView(ctx context.Context, f filter, now time.Time) *browseView {
	loc := now.Location()
	v := &browseView{Title: "Records", Now: now.Format(timeLayout), F: f, Search: f.Q != ""}
	st, err := h.admin.Status(ctx, &hearthv1.StatusRequest{})
	if err != nil {
		v.Notes = append(v.Notes, callError("memory_status", err))
	}
	v.Namespaces = namespaceOptions(st.GetNamespaces(), f.NS)
	v.Types = choices(recordTypes, f.Type)
	v.Statuses = choices(recordStatuses, f.Status)
	if !v.Search {
		v.Matching = matching(st, err == nil, f)
	}

	mem := hearthv1.NewMemoryServiceClient(h.cfg.Conn)
	switch {
	case f.NS == "":
		v.Scope = "every namespace"
	case f.Chain:
		v.Scope = f.NS + " and its scope chain"
		if ns, err := mem.Namespace(ctx, &hearthv1.NamespaceRequest{Name: f.NS}); err == nil {
			v.Scope = f.NS + " and its scope chain: " + strings.Join(ns.GetScopes(), " → ")
		}
	default:
		v.Scope = f.NS + " alone"
	}
	if v.Search {
		h.search(ctx, mem, f, v, loc)
	} else {
		h.list(ctx, mem, f, v, loc)
	}
	if f.After != "" || len(f.Exclude) > 0 {
		first := f
		first.After, first.Exclude = "", nil
		v.First = first.href()
	}
	return v
}

// within says which namespaces f reaches, as memory_timeline and
// memory_search take it.
func (f filter) within() (within, ns string) {
	switch {
	case f.NS == "":
		return "all", ""
	case f.Chain:
		return "chain", f.NS
	}
	return "namespace", f.NS
}

// list shows listRows records from f.After on: memory_timeline's replies,
// each asked from the last record of the one before, until there are
// listRows or a reply says the records end.
func (h *Handler) list(ctx context.Context, mem hearthv1.MemoryServiceClient, f filter, v *browseView, loc *time.Location) {
	req := &hearthv1.TimelineRequest{AfterId: f.After}
	req.Within, req.Namespace = f.within()
	if f.Type != "" {
		req.Types = []string{f.Type}
	}
	if f.Status != "" {
		req.Statuses = []string{f.Status}
	}
	more := false
	// Every reply that says more follow holds a record: its budget keeps
	// the first whatever its size.
	for len(v.Rows) < listRows {
		req.Limit = uint32(listRows - len(v.Rows))
		resp, err := mem.Timeline(ctx, req)
		if err != nil {
			v.Err = callError("memory_timeline", err)
			return
		}
		recs := resp.GetRecords()
		for _, r := range recs {
			v.Rows = append(v.Rows, recordRow{
				ID: r.GetId(), Href: recordHref(r.GetId()), Title: r.GetTitle(),
				Namespace: r.GetNamespace(), NSHref: filter{NS: r.GetNamespace()}.href(),
				Type: r.GetType(), Status: r.GetStatus(), Color: statusColor(r.GetStatus()),
				Created: r.GetCreatedAt().AsTime().In(loc).Format(dayLayout), Revision: itoa(r.GetRevision()), Writer: r.GetWriter(),
				Snippet: shorten(oneLine(r.GetContent()), 160),
			})
		}
		more = len(recs) > 0 && (resp.GetTruncated() || uint32(len(recs)) == req.Limit)
		if !more {
			break
		}
		req.AfterId = recs[len(recs)-1].GetId()
	}
	if more {
		next := f
		next.After = v.Rows[len(v.Rows)-1].ID
		v.Next = next.href()
	}
}

func (h *Handler) search(ctx context.Context, mem hearthv1.MemoryServiceClient, f filter, v *browseView, loc *time.Location) {
	live := f.Status == "" || f.Status == "active" || f.Status == "candidate"
	if !live {
		v.Err = "Search finds active and candidate records only: clear the search to list " + f.Status + " records."
		return
	}
	req := &hearthv1.SearchRequest{Query: f.Q, Limit: searchLimit, Exclude: f.Exclude, Recall: true}
	req.Within, req.Namespace = f.within()
	if f.Type != "" {
		req.Types = []string{f.Type}
	}
	resp, err := mem.Search(ctx, req)
	if err != nil {
		v.Err = callError("memory_search", err)
		return
	}
	seen := append([]string(nil), f.Exclude...)
	for _, hit := range resp.GetHits() {
		seen = append(seen, hit.GetId())
		if f.Status != "" && hit.GetStatus() != f.Status {
			continue
		}
		v.Rows = append(v.Rows, recordRow{
			ID: hit.GetId(), Href: recordHref(hit.GetId()), Title: hit.GetTitle(),
			Namespace: hit.GetNamespace(), NSHref: filter{NS: hit.GetNamespace()}.href(),
			Type: hit.GetType(), Status: hit.GetStatus(), Color: statusColor(hit.GetStatus()),
			Snippet: hit.GetSnippet(), Score: strconv.FormatFloat(hit.GetScore(), 'g', 4, 64),
		})
	}
	if f.Status != "" && len(v.Rows) < len(resp.GetHits()) {
		v.Notes = append(v.Notes, itoa(len(resp.GetHits())-len(v.Rows))+" hits of other statuses are not shown.")
	}
	more := resp.GetTruncated() || uint32(len(resp.GetHits())) == searchLimit
	switch {
	case more && len(seen) <= maxExcludeIDs:
		next := f
		next.After, next.Exclude = "", seen
		v.Next = next.href()
	case more:
		v.Notes = append(v.Notes, "More hits exist than the page can page through ("+itoa(maxExcludeIDs)+"): narrow the search.")
	}
	if resp.GetTruncated() {
		v.Notes = append(v.Notes, "This page holds what fits memory_search's 750-token budget; "+
			itoa(resp.GetLeftOut())+" more hits continue on the next page.")
	}
	v.Notes = append(v.Notes, "Ranked by "+resp.GetRanking()+". Hits found here count as returned, as an agent's search does; opening a record does not count.")
}

// matching counts the records the list filters select from memory_status,
// when its counts can tell: every namespace by type and status, or one
// namespace alone without other filters.
func matching(st *hearthv1.StatusResponse, ok bool, f filter) string {
	if !ok {
		return ""
	}
	if f.NS != "" {
		if f.Chain || f.Type != "" || f.Status != "" {
			return ""
		}
		for _, n := range st.GetNamespaces() {
			if n.GetNamespace() == f.NS {
				return itoa(n.GetRecords())
			}
		}
		return "0"
	}
	var n uint32
	for _, c := range st.GetCounts() {
		if f.Type != "" && c.GetType() != f.Type {
			continue
		}
		if f.Status == "" && c.GetStatus() == "deleted" || f.Status != "" && c.GetStatus() != f.Status {
			continue
		}
		n += c.GetCount()
	}
	return itoa(n)
}

// namespaceOptions lists the namespaces holding records, by name, and the
// one asked for even when it holds none.
func namespaceOptions(ns []*hearthv1.NamespaceCount, cur string) []option {
	out := []option{{Value: "", Label: "every namespace", Selected: cur == ""}}
	found := false
	names := make([]string, 0, len(ns))
	for _, n := range ns {
		names = append(names, n.GetNamespace())
	}
	sort.Strings(names)
	for _, n := range names {
		out = append(out, option{Value: n, Label: n, Selected: n == cur})
		found = found || n == cur
	}
	if cur != "" && !found {
		out = append(out, option{Value: cur, Label: cur, Selected: true})
	}
	return out
}

func choices(values []string, cur string) []option {
	out := []option{{Value: "", Label: "any", Selected: cur == ""}}
	for _, s := range values {
		out = append(out, option{Value: s, Label: s, Selected: s == cur})
	}
	return out
}

// oneLine folds whitespace runs, newlines included, into single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// recordView is what the record view shows.
type recordView struct {
	Now  string
	ID   string
	Code int
	Err  string
	// Purged is set when only the record's audit rows remain.
	Purged bool

	Title, Content                   string
	Namespace, NSHref                string
	Type, Status, Color              string
	Writer, Source, Created, Updated string
	Topics                           []string
	Supersedes, SupersededBy         string
	SupersedesHref, SupersededByHref string
	// SupersedesTitle and SupersededByTitle name the linked records
	// ("" when they cannot be read: the id stands alone).
	SupersedesTitle, SupersededByTitle string

	Tiles    []tile
	Anchors  []anchorRow
	Evidence []stanceRow
	Entries  []entryRow
	Chart    revisionChart
	// EntriesNote says which audit rows are not shown.
	EntriesNote string
}

type anchorRow struct {
	Anchor, State, Color, Checked string
}

type stanceRow struct {
	Client, Stance, Color, Note, At string
}

type entryRow struct {
	At, Client, Action, Color, Revision, Detail string
}

// linkTitle is the title of a linked record, read with memory_history (a
// view, not a use: memory_get would count it as one), or "" when there is
// none to read.
func linkTitle(ctx context.Context, mem hearthv1.MemoryServiceClient, id string) string {
	if id == "" {
		return ""
	}
	resp, err := mem.History(ctx, &hearthv1.HistoryRequest{Id: id, Limit: 1})
	if err != nil {
		return ""
	}
	return resp.GetRecord().GetTitle()
}

func (h *Handler) recordView(ctx context.Context, id string, now time.Time) *recordView {
	loc := now.Location()
	v := &recordView{Now: now.Format(timeLayout), ID: id, Code: http.StatusOK}
	mem := hearthv1.NewMemoryServiceClient(h.cfg.Conn)
	resp, err := mem.History(ctx, &hearthv1.HistoryRequest{Id: id, Limit: historyLimit})
	if err != nil {
		v.Title, v.Err = "Record", callError("memory_history", err)
		switch status.Code(err) {
		case codes.NotFound:
			v.Code = http.StatusNotFound
		case codes.InvalidArgument:
			v.Code = http.StatusBadRequest
		}
		return v
	}
	at := func(t interface{ AsTime() time.Time }) string { return t.AsTime().In(loc).Format(timeLayout) }
	for _, e := range resp.GetEntries() {
		row := entryRow{At: at(e.GetAt()), Client: e.GetClient(), Action: e.GetAction(), Color: actionColor(e.GetAction()), Detail: e.GetDetail()}
		if e.GetRevision() > 0 {
			row.Revision = itoa(e.GetRevision())
		}
		v.Entries = append(v.Entries, row)
	}
	v.Chart = newRevisionChart(resp.GetEntries(), loc)
	shown := uint32(len(resp.GetEntries()))
	if total := resp.GetTotalEntries(); total > shown {
		v.EntriesNote = itoa(shown) + " of " + itoa(total) + " audit rows, the newest, are shown"
		if resp.GetTruncated() {
			v.EntriesNote += " (memory_history packs them into the 2,000-token records budget on top of the record)"
		}
		v.EntriesNote += "."
	}
	rec := resp.GetRecord()
	if rec == nil {
		v.Purged = true
		v.Title = "Purged record"
		return v
	}
	v.Title, v.Content = rec.GetTitle(), rec.GetContent()
	v.Namespace, v.NSHref = rec.GetNamespace(), filter{NS: rec.GetNamespace()}.href()
	v.Type, v.Status, v.Color = rec.GetType(), rec.GetStatus(), statusColor(rec.GetStatus())
	v.Writer, v.Source = rec.GetWriter(), rec.GetSource()
	v.Created, v.Updated = at(rec.GetCreatedAt()), at(rec.GetUpdatedAt())
	v.Topics = rec.GetTopics()
	v.Supersedes, v.SupersedesHref = rec.GetSupersedes(), recordHref(rec.GetSupersedes())
	v.SupersededBy, v.SupersededByHref = rec.GetSupersededBy(), recordHref(rec.GetSupersededBy())
	v.SupersedesTitle, v.SupersededByTitle = linkTitle(ctx, mem, v.Supersedes), linkTitle(ctx, mem, v.SupersededBy)
	for _, a := range rec.GetAnchors() {
		row := anchorRow{Anchor: a.GetAnchor(), State: a.GetState(), Color: anchorColor(a.GetState()), Checked: "never"}
		if a.GetCheckedAt() != nil {
			row.Checked = at(a.GetCheckedAt())
		}
		v.Anchors = append(v.Anchors, row)
	}
	for _, s := range resp.GetEvidence() {
		color := "#4fb89a"
		if s.GetStance() == "contradicts" {
			color = "#c8645f"
		}
		v.Evidence = append(v.Evidence, stanceRow{Client: s.GetClient(), Stance: s.GetStance(), Color: color, Note: s.GetNote(), At: at(s.GetAt())})
	}
	u := resp.GetUsage()
	last := func(t interface{ AsTime() time.Time }, ok bool) string {
		if !ok {
			return "never"
		}
		return "last " + at(t)
	}
	v.Tiles = []tile{
		{Key: "revision", Label: "revision", Value: itoa(rec.GetRevision()), Note: "updated " + v.Updated},
		{Key: "confidence", Label: "confidence", Value: strconv.FormatFloat(rec.GetEffectiveConfidence(), 'f', 2, 64),
			Note: "asserted " + strconv.FormatFloat(rec.GetConfidence(), 'f', 2, 64)},
		{Key: "evidence", Label: "evidence", Value: itoa(rec.GetProofCount()) + " / " + itoa(rec.GetRefutationCount()), Note: "for / against"},
		{Key: "returned", Label: "returned", Value: itoa(u.GetReturned()), Note: last(u.GetLastReturnedAt(), u.GetLastReturnedAt() != nil)},
		{Key: "fetched", Label: "fetched", Value: itoa(u.GetFetched()), Note: last(u.GetLastFetchedAt(), u.GetLastFetchedAt() != nil)},
	}
	return v
}

func anchorColor(state string) string {
	switch state {
	case "available":
		return "#4fb89a"
	case "unavailable":
		return "#c8645f"
	}
	return otherColor
}
