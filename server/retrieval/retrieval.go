// Package retrieval is the one pipeline behind memory_search and context
// packets: it reads every ranked list for a query within a scope chain and
// fuses them into one ranking (docs/design.md R-K2, R-K3). Full text is always a list;
// other lists (the encoder's cosine list, over the in-memory vector Index)
// join through List, and a list that cannot answer a query steps aside with
// ErrUnavailable, so the ranking falls back to full text alone and says so
// in its mode.
package retrieval

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hearth-memory/hearth/server/ranking"
	"github.com/hearth-memory/hearth/storage"
)

// Query is what a search or a context packet asks of the pipeline.
type Query struct {
	// Text is the query or task, natural language.
	Text string
	// Chain is the scope chain, home first (R-N4); AllRepositories adds
	// every repository namespace after it (a hub's reach, R-N5). An empty
	// Chain reaches every namespace (memory_search's within: all).
	Chain           []string
	AllRepositories bool
	// Types, when not empty, keeps records of those types.
	Types []string
	// Exclude drops records whose id starts with an entry of 8 or more
	// characters (R-K4).
	Exclude []string
	// Depth is how many hits each list holds: max(limit, 20) for a search
	// (R-K3), the packet's pool for a context packet.
	Depth int
	// Mode, when not "", asks for one ranking: ranking.ModeFTS (full text
	// alone) or the name of another list alone (ranking.ModeCosine). ""
	// fuses every list that can answer.
	Mode string
	// MinCosine, when set, keeps hits at least that similar to the query
	// (R-K4). Full-text ranking knows no similarity: under it the bar
	// drops nothing, so a hook that always sends it still recalls by full
	// text without an encoder.
	MinCosine *float64
	// Known are the ids of the hits earlier lists returned, which a
	// similarity list gives cosines for too. The pipeline sets it.
	Known []string
	// Literal ranks full text by the query's own words, without synonyms
	// (storage.SearchQuery.Literal).
	Literal bool
	// Snippets is how many of the best hits the caller shows with their
	// snippets: the full-text hits among them that have none yet have
	// theirs cut once the lists are fused. A search reads more hits than
	// it returns (Depth), and a context packet shows none.
	Snippets int
	// Feedback re-ranks the full-text list by the words its best hits
	// share (storage.SearchQuery.Feedback): memory_search's questions.
	// Feedback reads the snippets of every hit, which then come with them.
	Feedback bool
}

// Ranked is a list's answer: its hits, best first, and, from a similarity
// list, the cosine of each hit and of every record in Query.Known.
type Ranked struct {
	Hits   []storage.Hit
	Cosine map[string]float64
}

// List is one ranked list of the pipeline.
type List interface {
	// Name is how hits' why names the list, e.g. "fts".
	Name() string
	// Rank returns the list's hits for q, best first, at most q.Depth. A
	// list that cannot answer this query returns an error wrapping
	// ErrUnavailable that says why.
	Rank(ctx context.Context, q Query) (Ranked, error)
}

// ErrUnavailable is returned by a List that cannot answer a query (its
// model is down, too slow, or behind the store); the pipeline then ranks
// without it.
var ErrUnavailable = errors.New("retrieval: list unavailable")

// Result is a ranking.
type Result struct {
	// Hits are the fused hits, best first.
	Hits []ranking.Hit
	// Mode is ranking.ModeRRF when more than one list answered, else
	// ranking.ModeFTS, or the one list asked for by Query.Mode.
	Mode string
	// FTS is the full-text list alone, best first: what the demand signal
	// records, so an encoder going up or down does not move it (R-W2).
	FTS []storage.Hit
	// Fallback, when a list stepped aside, says why (wrapping
	// ErrUnavailable).
	Fallback error
}

// Pipeline ranks queries over full text and any further lists.
type Pipeline struct {
	db    *storage.DB
	lists []List
}

// New returns the pipeline over db's full text and the further lists given,
// fused in that order.
func New(db *storage.DB, more ...List) *Pipeline {
	return &Pipeline{db: db, lists: append([]List{FTS{DB: db}}, more...)}
}

// Run ranks q. Full text must answer; a further list that returns
// ErrUnavailable is left out (Result.Fallback says why), any other error
// fails the run. A query for one list alone (Query.Mode) fails with that
// list's ErrUnavailable when it cannot answer.
func (p *Pipeline) Run(ctx context.Context, q Query) (Result, error) {
	var lists []ranking.List
	var seen, fts []storage.Hit
	var fallback error
	mode := q.Mode
	for i, l := range p.lists {
		if mode != "" && l.Name() != mode {
			continue
		}
		q.Known = nil
		if i > 0 {
			q.Known = make([]string, 0, len(seen))
			for _, h := range seen {
				q.Known = append(q.Known, h.Record.ID)
			}
		}
		r, err := l.Rank(ctx, q)
		if errors.Is(err, ErrUnavailable) && i > 0 && mode == "" {
			fallback = err
			continue
		}
		if err != nil {
			return Result{}, err
		}
		if l.Name() == ranking.ModeFTS {
			fts = r.Hits
		}
		lists = append(lists, ranking.List{Name: l.Name(), Hits: r.Hits, Cosine: r.Cosine})
		seen = append(seen, r.Hits...)
	}
	if len(lists) == 0 {
		return Result{}, fmt.Errorf("%w: no list %q", ErrUnavailable, mode)
	}
	if mode == "" {
		mode = ranking.ModeFTS
		if len(lists) > 1 {
			mode = ranking.ModeRRF
		}
	}
	hits := ranking.Fuse(chainOf(q.Chain, seen), lists...)
	if q.MinCosine != nil && mode != ranking.ModeFTS {
		kept := hits[:0]
		for _, h := range hits {
			if h.HasCosine && h.Cosine >= *q.MinCosine {
				kept = append(kept, h)
			}
		}
		hits = kept
	}
	cutSnippets(q, fts, hits)
	return Result{Hits: hits, Mode: mode, FTS: fts, Fallback: fallback}, nil
}

// cutSnippets cuts the snippets of the full-text hits among the first
// q.Snippets of hits that storage.Search left without one, as it would have
// cut them: the full-text list's snippet comes before any other list's. A
// hit whose content gives no snippet keeps what another list gave.
func cutSnippets(q Query, fts []storage.Hit, hits []ranking.Hit) {
	if q.Snippets <= 0 || len(fts) == 0 {
		return
	}
	inFTS := make(map[string]bool, len(fts))
	for _, h := range fts {
		if h.Snippet == "" {
			inFTS[h.Record.ID] = true
		}
	}
	if len(inFTS) == 0 {
		return
	}
	sn := storage.NewSnippets(storage.SearchQuery{Text: q.Text, Literal: q.Literal})
	defer sn.Release()
	for i := range hits[:min(q.Snippets, len(hits))] {
		if !inFTS[hits[i].Record.ID] {
			continue
		}
		if s := sn.Cut(hits[i].Record.Content); s != "" {
			hits[i].Snippet = s
		}
	}
}

// Returned counts records as returned (R-K5): the hits and packet records
// that reached the caller, after the budget. The count is kept in memory and
// stored by the single writer within storage.UsageFlushInterval, so a
// search never waits for a write.
func (p *Pipeline) Returned(ids []string) {
	p.db.NoteReturned(ids)
}

// chainOf returns chain followed by the other namespaces hits came from, in
// name order: a hub's reach ranks after its own scopes on equal scores, and
// ranking never sees a namespace outside its chain.
func chainOf(chain []string, hits []storage.Hit) []string {
	var more []string
	for _, h := range hits {
		if ns := h.Record.Namespace; !slices.Contains(chain, ns) && !slices.Contains(more, ns) {
			more = append(more, ns)
		}
	}
	if len(more) == 0 {
		return chain
	}
	slices.Sort(more)
	return append(slices.Clip(chain), more...)
}

// FTS is the full-text list: FTS5 over title and content, bm25 with the
// title weighted above the content (R-K1).
type FTS struct {
	DB *storage.DB
}

// Name returns "fts".
func (FTS) Name() string { return ranking.ModeFTS }

// Rank runs the full-text search. Its hits have no snippets, unless
// feedback read them: Pipeline.Run cuts those of the hits a caller shows
// (Query.Snippets).
func (f FTS) Rank(ctx context.Context, q Query) (Ranked, error) {
	hits, err := f.DB.Search(ctx, storage.SearchQuery{
		Text: q.Text, Namespaces: q.Chain, Types: q.Types, Exclude: q.Exclude,
		Limit: q.Depth, AllRepositories: q.AllRepositories, Literal: q.Literal, Feedback: q.Feedback,
		// The pipeline cuts the snippets of the hits it returns (Snippets).
		NoSnippets: true,
	})
	return Ranked{Hits: hits}, err
}
