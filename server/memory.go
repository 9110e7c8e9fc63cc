package server

import (
	"context"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/budget"
	"github.com/hearth-memory/hearth/server/ranking"
	"github.com/hearth-memory/hearth/server/retrieval"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/namespace"
	"github.com/hearth-memory/hearth/storage/screen"
	"google.golang.org/protobuf/types/known/structpb"
)

type memoryService struct {
	hearthv1.UnimplementedMemoryServiceServer
	*Server
}

var _ hearthv1.MemoryServiceServer = (*memoryService)(nil)

// checkStoreRequest validates everything about a store but the screen. A
// remote in place of the namespace is resolved by resolve.
func checkStoreRequest(sz *budget.Sizer, r *hearthv1.StoreRequest) error {
	switch {
	case r.GetNamespace() != "":
		if err := checkNamespace("namespace", r.GetNamespace()); err != nil {
			return err
		}
	case r.GetRemote() == "":
		return invalid("namespace", "is required (or give remote, the repository's git remote URL)")
	}
	if err := storage.CheckType("type", r.GetType()); err != nil {
		return err
	}
	if err := checkTitle("title", r.GetTitle()); err != nil {
		return err
	}
	if err := checkContent("content", r.GetContent()); err != nil {
		return err
	}
	if r.Confidence != nil {
		if err := storage.CheckConfidence("confidence", r.GetConfidence()); err != nil {
			return err
		}
	}
	if err := checkTopics("topics", r.GetTopics()); err != nil {
		return err
	}
	if err := checkAnchors("anchors", r.GetAnchors()); err != nil {
		return err
	}
	if r.GetSupersedes() != "" {
		if err := checkID("supersedes", r.GetSupersedes()); err != nil {
			return err
		}
	}
	anchors := make([]*hearthv1.Anchor, len(r.GetAnchors()))
	for i, a := range r.GetAnchors() {
		anchors[i] = &hearthv1.Anchor{Anchor: a}
	}
	ns := r.GetNamespace()
	if ns == "" {
		ns = strings.Repeat("n", namespace.MaxLen) // a remote's namespace, at its longest
	}
	return checkRecordSize(sz, "content", &hearthv1.Record{
		Namespace: ns, Type: r.GetType(), Title: r.GetTitle(), Content: r.GetContent(),
		Confidence: r.GetConfidence(), Topics: r.GetTopics(), Anchors: anchors, Supersedes: r.GetSupersedes(),
		Source: storage.SourceStore, Writer: strings.Repeat("w", 64),
	})
}

// screenRecord screens the free text of a record: title, content, topics and
// anchors, with field names as the caller sent them (prefix "changes." for
// updates).
type screened struct {
	title, content  screen.Text
	topics, anchors []screen.Text
}

func screenAnchors(field string, as []string) ([]screen.Text, error) {
	out := make([]screen.Text, len(as))
	for i, a := range as {
		t, err := screen.Anchor(fieldIndex(field, i), a)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

func (m *memoryService) Store(ctx context.Context, r *hearthv1.StoreRequest) (*hearthv1.StoreResponse, error) {
	who, err := writer(ctx)
	if err != nil {
		return nil, err
	}
	// Until resolve has screened it, the caller's namespace is not audited.
	if err := checkStoreRequest(m.size, r); err != nil {
		return nil, m.fail(ctx, "", "", err)
	}
	home, _, err := m.resolve("namespace", r.GetNamespace(), r.GetRemote(), nil)
	if err != nil {
		return nil, m.fail(ctx, "", "", err)
	}
	var sc screened
	if sc.title, err = screen.Check("title", r.GetTitle()); err == nil {
		if sc.content, err = screen.Check("content", r.GetContent()); err == nil {
			if sc.topics, err = screen.CheckAll("topics", r.GetTopics()); err == nil {
				sc.anchors, err = screenAnchors("anchors", r.GetAnchors())
			}
		}
	}
	if err != nil {
		return nil, m.fail(ctx, home, "", err)
	}
	conf := defaultConfidence
	if r.Confidence != nil {
		conf = r.GetConfidence()
	}
	rec, err := m.db.Store(ctx, storage.NewRecord{
		Namespace:  home,
		Type:       r.GetType(),
		Title:      sc.title,
		Content:    sc.content,
		Confidence: conf,
		Topics:     sc.topics,
		Anchors:    sc.anchors,
		Supersedes: r.GetSupersedes(),
		Writer:     who,
		Source:     storage.SourceStore,
		Status:     storage.StatusActive,
	})
	if err != nil {
		return nil, m.fail(ctx, home, r.GetSupersedes(), err)
	}
	return &hearthv1.StoreResponse{Record: recordToProto(rec)}, nil
}

func checkGetRequest(r *hearthv1.GetRequest) error {
	if len(r.GetIds()) == 0 {
		return invalid("ids", "is required")
	}
	if len(r.GetIds()) > maxIDs {
		return invalid("ids", "has %d ids; at most %d", len(r.GetIds()), maxIDs)
	}
	return checkSessionID("session_id", r.GetSessionId(), maxGetSessID)
}

// Get returns the records named by ids, in the order asked, within the
// records budget. A well-formed id that names no record is listed in
// missing, once, in the order asked; an entry that is not a record id at all
// is reported by its position in malformed (never echoed: it may be pasted
// text). The others are still returned.
func (m *memoryService) Get(ctx context.Context, r *hearthv1.GetRequest) (*hearthv1.GetResponse, error) {
	if err := checkGetRequest(r); err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	var wellFormed []string
	var malformed []uint32
	for i, id := range r.GetIds() {
		if idPattern.MatchString(id) {
			wellFormed = append(wellFormed, id)
		} else {
			malformed = append(malformed, uint32(i))
		}
	}
	recs, err := m.db.Get(ctx, wellFormed)
	if err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	found := make(map[string]bool, len(recs))
	for _, rec := range recs {
		found[rec.ID] = true
	}
	resp := &hearthv1.GetResponse{Malformed: malformed}
	seen := map[string]bool{}
	for _, id := range wellFormed {
		if !found[id] && !seen[id] {
			resp.Missing = append(resp.Missing, id)
		}
		seen[id] = true
	}
	kept, err := budget.Fit(m.size, resp, resp.SetRecords, recordsToProto(recs), budget.Records, true)
	if err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	// Counted in memory, stored by the single writer within a second.
	m.db.NoteFetched(ids(recs[:kept]))
	m.recordUse(ctx, r.GetSessionId(), ids(recs[:kept]))
	return resp, nil
}

func ids(rs []*storage.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

// stringList reads a JSON array of strings from a ListValue.
func stringList(field string, l *structpb.ListValue) ([]string, error) {
	out := make([]string, 0, len(l.GetValues()))
	for i, v := range l.GetValues() {
		s, ok := v.GetKind().(*structpb.Value_StringValue)
		if !ok {
			return nil, invalid(fieldIndex(field, i), "must be a string")
		}
		out = append(out, s.StringValue)
	}
	return out, nil
}

// updateLists are an update's list changes, parsed once from their JSON
// arrays by checkUpdateRequest (nil when the list is not changed).
type updateLists struct {
	topics, anchors []string
}

// checkUpdateRequest validates an update and returns its parsed lists.
func checkUpdateRequest(r *hearthv1.UpdateRequest) (updateLists, error) {
	var lists updateLists
	if err := checkID("id", r.GetId()); err != nil {
		return lists, err
	}
	if r.GetRevision() == 0 {
		return lists, invalid("revision", "is required (the revision you last saw)")
	}
	c := r.GetChanges()
	if c == nil {
		return lists, invalid("changes", "is required")
	}
	if c.Title != nil {
		if err := checkTitle("changes.title", c.GetTitle()); err != nil {
			return lists, err
		}
	}
	if c.Content != nil {
		if err := checkContent("changes.content", c.GetContent()); err != nil {
			return lists, err
		}
	}
	if c.Type != nil {
		if err := storage.CheckType("changes.type", c.GetType()); err != nil {
			return lists, err
		}
	}
	if c.Status != nil {
		if err := storage.CheckLive("changes.status", c.GetStatus()); err != nil {
			return lists, err
		}
	}
	if c.Confidence != nil {
		if err := storage.CheckConfidence("changes.confidence", c.GetConfidence()); err != nil {
			return lists, err
		}
	}
	if c.Topics != nil {
		ts, err := stringList("changes.topics", c.Topics)
		if err != nil {
			return lists, err
		}
		if err := checkTopics("changes.topics", ts); err != nil {
			return lists, err
		}
		lists.topics = ts
	}
	if c.Anchors != nil {
		as, err := stringList("changes.anchors", c.Anchors)
		if err != nil {
			return lists, err
		}
		if err := checkAnchors("changes.anchors", as); err != nil {
			return lists, err
		}
		lists.anchors = as
	}
	if c.Supersedes != nil {
		if err := checkID("changes.supersedes", c.GetSupersedes()); err != nil {
			return lists, err
		}
	}
	return lists, nil
}

func (m *memoryService) Update(ctx context.Context, r *hearthv1.UpdateRequest) (*hearthv1.UpdateResponse, error) {
	who, err := writer(ctx)
	if err != nil {
		return nil, err
	}
	lists, err := checkUpdateRequest(r)
	if err != nil {
		return nil, m.fail(ctx, "", r.GetId(), err)
	}
	ch, merged, err := m.changes(ctx, r, lists)
	if err != nil {
		return nil, m.fail(ctx, "", r.GetId(), err)
	}
	if merged != nil {
		if err := checkRecordSize(m.size, "changes", merged); err != nil {
			return nil, m.fail(ctx, "", r.GetId(), err)
		}
	}
	rec, err := m.db.Update(ctx, r.GetId(), int(r.GetRevision()), ch, who)
	if err != nil {
		return nil, m.fail(ctx, "", r.GetId(), err)
	}
	return &hearthv1.UpdateResponse{Record: recordToProto(rec)}, nil
}

// changes screens an update's changes and returns them with the record as it
// would be after them (for the size check), or nil when the record is not at
// the given revision (storage reports the conflict).
func (m *memoryService) changes(ctx context.Context, r *hearthv1.UpdateRequest, lists updateLists) (storage.Changes, *hearthv1.Record, error) {
	c := r.GetChanges()
	var ch storage.Changes
	cur, err := m.db.Get(ctx, []string{r.GetId()})
	if err != nil {
		return ch, nil, err
	}
	var merged *hearthv1.Record
	if len(cur) == 1 && cur[0].Revision == int(r.GetRevision()) {
		merged = recordToProto(cur[0])
	}
	if c.Title != nil {
		t, err := screen.Check("changes.title", c.GetTitle())
		if err != nil {
			return ch, nil, err
		}
		ch.Title = &t
		if merged != nil {
			merged.Title = c.GetTitle()
		}
	}
	if c.Content != nil {
		t, err := screen.Check("changes.content", c.GetContent())
		if err != nil {
			return ch, nil, err
		}
		ch.Content = &t
		if merged != nil {
			merged.Content = c.GetContent()
		}
	}
	if c.Topics != nil {
		list := lists.topics
		t, err := screen.CheckAll("changes.topics", list)
		if err != nil {
			return ch, nil, err
		}
		ch.Topics = &t
		if merged != nil {
			merged.Topics = list
		}
	}
	if c.Anchors != nil {
		list := lists.anchors
		t, err := screenAnchors("changes.anchors", list)
		if err != nil {
			return ch, nil, err
		}
		ch.Anchors = &t
		if merged != nil {
			merged.Anchors = nil
			for _, a := range list {
				merged.Anchors = append(merged.Anchors, &hearthv1.Anchor{Anchor: a})
			}
		}
	}
	if c.Type != nil {
		v := c.GetType()
		ch.Type = &v
	}
	if c.Status != nil {
		v := c.GetStatus()
		ch.Status = &v
	}
	if c.Confidence != nil {
		v := c.GetConfidence()
		ch.Confidence = &v
	}
	if c.Supersedes != nil {
		v := c.GetSupersedes()
		ch.Supersedes = &v
		if merged != nil {
			merged.Supersedes = v
		}
	}
	return ch, merged, nil
}

func checkForgetRequest(r *hearthv1.ForgetRequest) error {
	if err := checkID("id", r.GetId()); err != nil {
		return err
	}
	if r.Revision != nil && r.GetRevision() == 0 {
		return invalid("revision", "must be a revision (1 or more) when given")
	}
	return checkBounded("reason", r.GetReason(), true, maxReasonChars)
}

func (m *memoryService) Forget(ctx context.Context, r *hearthv1.ForgetRequest) (*hearthv1.ForgetResponse, error) {
	who, err := writer(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkForgetRequest(r); err != nil {
		return nil, m.fail(ctx, "", r.GetId(), err)
	}
	reason, err := screen.Check("reason", r.GetReason())
	if err != nil {
		return nil, m.fail(ctx, "", r.GetId(), err)
	}
	rec, err := m.db.Forget(ctx, r.GetId(), int(r.GetRevision()), reason, who)
	if err != nil {
		return nil, m.fail(ctx, "", r.GetId(), err)
	}
	return &hearthv1.ForgetResponse{Record: recordToProto(rec)}, nil
}

// minPool: each ranked list is read max(limit, 20) deep (R-K3).
const minPool = 20

func checkSearchRequest(r *hearthv1.SearchRequest) error {
	q := r.GetQuery()
	if strings.TrimSpace(q) == "" {
		return invalid("query", "is required")
	}
	if !utf8.ValidString(q) {
		return invalid("query", "is not valid UTF-8")
	}
	if err := checkLen("query", q, maxQueryChars); err != nil {
		return err
	}
	for i, t := range r.GetTypes() {
		if err := storage.CheckType(fieldIndex("types", i), t); err != nil {
			return err
		}
	}
	if int(r.GetLimit()) > maxSearchLimit {
		return invalid("limit", "must be at most %d", maxSearchLimit)
	}
	if r.MinCosine != nil && (math.IsNaN(r.GetMinCosine()) || r.GetMinCosine() < -1 || r.GetMinCosine() > 1) {
		return invalid("min_cosine", "must be between -1 and 1")
	}
	if len(r.GetExclude()) > maxExclude {
		return invalid("exclude", "has more than %d entries", maxExclude)
	}
	if err := checkSessionID("session_id", r.GetSessionId(), maxSearchSessID); err != nil {
		return err
	}
	if m := r.GetRanking(); m != "" && !slices.Contains(searchRankings, m) {
		return invalid("ranking", "must be one of %s, or empty for the best available", strings.Join(searchRankings, ", "))
	}
	return checkWithin(r.GetWithin(), r.GetNamespace(), r.GetRemote(), r.GetTopics())
}

func (m *memoryService) Search(ctx context.Context, r *hearthv1.SearchRequest) (*hearthv1.SearchResponse, error) {
	if err := checkSearchRequest(r); err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	limit := int(r.GetLimit())
	if limit == 0 {
		limit = defaultSearchLimit
	}
	// A search that asks to abstain reorders every candidate for the
	// relevance bar, by the rerank server's scores or by coverage
	// (relevance.go): the candidates it may bring up need their snippets.
	rerank := r.GetAbstain() && r.GetRanking() == "" && m.reranker.Configured()
	snippets := limit
	if r.GetAbstain() {
		snippets = max(limit, minPool)
	}
	res, scopes, err := m.retrieveWithin(ctx, retrieval.Query{
		Text:      r.GetQuery(),
		Types:     r.GetTypes(),
		Exclude:   r.GetExclude(),
		Depth:     max(limit, minPool),
		Snippets:  snippets,
		Mode:      r.GetRanking(),
		MinCosine: r.MinCosine,
		Feedback:  true,
	}, r.GetWithin(), r.GetNamespace(), r.GetRemote(), r.GetTopics())
	if err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	ranked, reranked, err := m.relevant(ctx, r.GetQuery(), res.Hits, limit, r.GetAbstain(), rerank)
	if err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	mode := res.Mode
	if reranked {
		mode += rerankSuffix
	}
	out := make([]*hearthv1.SearchHit, len(ranked))
	for i, h := range ranked {
		out[i] = &hearthv1.SearchHit{
			Id: h.Record.ID, Namespace: h.Record.Namespace, Type: h.Record.Type, Title: h.Record.Title,
			Snippet: budget.Snippet(h.Snippet), Status: h.Record.Status, Score: h.Score, Why: h.Why,
			Unavailable: flagToProto(h.Record.Unavailable()),
		}
		if h.HasCosine && res.Mode != ranking.ModeFTS {
			c := math.Round(h.Cosine*1e4) / 1e4
			out[i].Cosine = &c
		}
	}
	resp := &hearthv1.SearchResponse{Ranking: mode, Scopes: scopes}
	kept, err := budget.Fit(m.size, resp, resp.SetHits, out, budget.Search, true)
	if err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	// Hits dropped by the limit are not counted as left out: the caller asked
	// for that many. Hits dropped by the budget are.
	returned := make([]string, kept)
	for i := range returned {
		returned[i] = out[i].Id
	}
	m.pipeline.Returned(returned)
	home := ""
	if len(scopes) > 0 {
		home = scopes[0]
	}
	m.recordAsk(ctx, r, home, res.FTS, limit)
	return resp, nil
}

func checkTimelineRequest(r *hearthv1.TimelineRequest) error {
	if int(r.GetLimit()) > maxTimelineLimit {
		return invalid("limit", "must be at most %d", maxTimelineLimit)
	}
	if r.Since != nil && r.GetSince().CheckValid() != nil {
		return invalid("since", "is not a valid time")
	}
	if r.Until != nil && r.GetUntil().CheckValid() != nil {
		return invalid("until", "is not a valid time")
	}
	if r.Since != nil && r.Until != nil && !r.GetSince().AsTime().Before(r.GetUntil().AsTime()) {
		return invalid("until", "must be after since")
	}
	return checkTimelineFilters(r)
}

func (m *memoryService) Timeline(ctx context.Context, r *hearthv1.TimelineRequest) (*hearthv1.TimelineResponse, error) {
	if err := checkTimelineRequest(r); err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	limit := int(r.GetLimit())
	if limit == 0 {
		limit = defaultTimeline
	}
	scopes, err := m.timelineScopes(r)
	if err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	q := storage.TimelineQuery{Namespaces: scopes, Types: r.GetTypes(), Statuses: r.GetStatuses(), After: r.GetAfterId(), Limit: limit}
	if r.Since != nil {
		q.Since = r.GetSince().AsTime()
	}
	if r.Until != nil {
		q.Until = r.GetUntil().AsTime()
	}
	// The page is read timelineBatch records at a time as the budget takes
	// them: a page of long records fills the budget long before its end.
	resp := &hearthv1.TimelineResponse{}
	err = m.db.TimelinePage(ctx, q, func(page *storage.Page) error {
		var recs []*hearthv1.Record
		_, err := budget.FitFunc(m.size, resp, resp.SetRecords, page.Len(), func(i int) (*hearthv1.Record, error) {
			if i == len(recs) {
				more, err := page.Records(i, min(i+timelineBatch, page.Len()))
				if err != nil {
					return nil, err
				}
				recs = append(recs, recordsToProto(more)...)
			}
			return recs[i], nil
		}, budget.Records, true)
		return err
	})
	if err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	return resp, nil
}

// timelineBatch is how many records a timeline reads at a time: about as
// many as its budget holds when they are long.
const timelineBatch = 10
