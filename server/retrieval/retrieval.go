// Package retrieval is the one pipeline behind memory_search and context
// packets: it reads every ranked list for a query within a scope chain and
// fuses them into one ranking (SPEC R-K2, R-K3). Full text is always a list;
// other lists (the encoder's cosine list) join through List, and a list that
// cannot answer a query steps aside with ErrUnavailable, so the ranking
// falls back to full text alone and says so in its mode.
package retrieval

import (
	"context"
	"errors"
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
}

// List is one ranked list of the pipeline.
type List interface {
	// Name is how hits' why names the list, e.g. "fts".
	Name() string
	// Rank returns the list's hits for q, best first, at most q.Depth. A
	// list that cannot answer this query returns ErrUnavailable.
	Rank(ctx context.Context, q Query) ([]storage.Hit, error)
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
	// ranking.ModeFTS.
	Mode string
	// FTS is the full-text list alone, best first: what the demand signal
	// records, so an encoder going up or down does not move it (R-W2).
	FTS []storage.Hit
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
// ErrUnavailable is left out, any other error fails the run.
func (p *Pipeline) Run(ctx context.Context, q Query) (Result, error) {
	var lists []ranking.List
	var seen, fts []storage.Hit
	for i, l := range p.lists {
		hits, err := l.Rank(ctx, q)
		if errors.Is(err, ErrUnavailable) && i > 0 {
			continue
		}
		if err != nil {
			return Result{}, err
		}
		if i == 0 {
			fts = hits
		}
		lists = append(lists, ranking.List{Name: l.Name(), Hits: hits})
		seen = append(seen, hits...)
	}
	mode := ranking.ModeFTS
	if len(lists) > 1 {
		mode = ranking.ModeRRF
	}
	return Result{Hits: ranking.Fuse(chainOf(q.Chain, seen), lists...), Mode: mode, FTS: fts}, nil
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

// Rank runs the full-text search.
func (f FTS) Rank(ctx context.Context, q Query) ([]storage.Hit, error) {
	return f.DB.Search(ctx, storage.SearchQuery{
		Text: q.Text, Namespaces: q.Chain, Types: q.Types, Exclude: q.Exclude,
		Limit: q.Depth, AllRepositories: q.AllRepositories,
	})
}
