package retrieval

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hearth-memory/hearth/server/encoder"
	"github.com/hearth-memory/hearth/server/ranking"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
)

// Why a cosine list steps aside (each wraps ErrUnavailable).
var (
	ErrEncoderDown   = fmt.Errorf("%w: the encoder is not configured or did not answer its last probe", ErrUnavailable)
	ErrSecretQuery   = fmt.Errorf("%w: the query screens as a secret and is not sent to the encoder", ErrUnavailable)
	ErrNotCurrent    = fmt.Errorf("%w: %v", ErrUnavailable, errNotCurrent)
	ErrIndexLoading  = fmt.Errorf("%w: %v", ErrUnavailable, errNotLoaded)
	ErrQueryVector   = fmt.Errorf("%w: the query vector did not arrive within embed_timeout_s", ErrUnavailable)
	ErrKeyMismatched = fmt.Errorf("%w: the query vector is not of the model and snapshot the records were embedded with", ErrUnavailable)
)

// Cosine is the cosine list: the records in scope ranked by the cosine
// similarity of their vectors to the query's (docs/design.md R-K3). It answers only
// when the encoder answered its last probe, every record the search could
// return has a current vector, the query does not screen as a secret
// (R-S5: it is then never sent) and the query vector arrives within the
// encoder's timeout (embed_timeout_s); otherwise it steps aside with an
// error wrapping ErrUnavailable that says which.
//
// The scan is approximate, its ranking exact: the 4-bit copy in the Index
// gives every candidate an approximate cosine, and the few dozen best by it
// (shortlist; with those found by full text, Query.Known) are read back as
// float32 and scored exactly.
type Cosine struct {
	DB      *storage.DB
	Encoder *encoder.Encoder
	Index   *Index
}

// Name returns "cosine".
func (Cosine) Name() string { return ranking.ModeCosine }

// Rank ranks the records in scope by cosine similarity to q.Text.
func (c Cosine) Rank(ctx context.Context, q Query) (Ranked, error) {
	if c.Encoder == nil || !c.Encoder.Configured() || !c.Encoder.Live() {
		return Ranked{}, ErrEncoderDown
	}
	if _, err := screen.Check("query", q.Text); err != nil {
		return Ranked{}, ErrSecretQuery
	}
	if err := c.Index.Sync(ctx); err != nil {
		return Ranked{}, err
	}
	es, model, snapshot, err := c.Index.collect(q)
	switch {
	case err == errNotLoaded:
		return Ranked{}, ErrIndexLoading
	case err != nil:
		return Ranked{}, ErrNotCurrent
	}
	// A record full text found that the index does not hold as a candidate
	// changed between the two reads: rank by full text.
	known, ok := candidates(es, q.Known)
	if !ok {
		return Ranked{}, ErrNotCurrent
	}
	if model != c.Encoder.Model() {
		return Ranked{}, ErrKeyMismatched
	}

	vec, err := c.Encoder.Query(ctx, q.Text)
	if err != nil {
		if ctx.Err() != nil {
			return Ranked{}, ctx.Err()
		}
		return Ranked{}, fmt.Errorf("%w (%v)", ErrQueryVector, err)
	}
	if vec.Model != model || vec.Snapshot != snapshot {
		return Ranked{}, ErrKeyMismatched
	}

	want := nearest(c.Index.prefix(vec.Values), es, q.Depth)
	scored := slices.Clone(want)
	for _, e := range known {
		if !slices.Contains(want, e) {
			scored = append(scored, e)
		}
	}
	ids := make([]string, len(scored))
	for i, e := range scored {
		ids[i] = e.id()
	}
	stored, err := c.DB.Embeddings(ctx, ids)
	if err != nil {
		return Ranked{}, err
	}
	cos := make(map[string]float64, len(scored))
	cosOf := make(map[*entry]float64, len(scored))
	for i, e := range scored {
		s, ok := stored[ids[i]]
		if !ok || digestKey(s.Digest) != e.digest || len(s.Vector) != len(vec.Values) {
			return Ranked{}, ErrNotCurrent // re-embedded or dropped since the index synced
		}
		cos[ids[i]] = dot(vec.Values, s.Vector)
		cosOf[e] = cos[ids[i]]
	}
	slices.SortFunc(want, func(a, b *entry) int {
		switch ca, cb := cosOf[a], cosOf[b]; {
		case ca > cb:
			return -1
		case ca < cb:
			return 1
		}
		return compareIDs(a, b)
	})
	want = want[:min(len(want), q.Depth)]

	top := make([]string, len(want))
	for i, e := range want {
		top[i] = e.id()
	}
	recs, err := c.DB.Get(ctx, top)
	if err != nil {
		return Ranked{}, err
	}
	recByID := make(map[string]*storage.Record, len(recs))
	for _, r := range recs {
		recByID[r.ID] = r
	}
	hits := make([]storage.Hit, 0, len(top))
	for _, id := range top {
		r := recByID[id]
		if r == nil || (r.Status != storage.StatusActive && r.Status != storage.StatusCandidate) {
			return Ranked{}, ErrNotCurrent // forgotten since the index synced
		}
		hits = append(hits, storage.Hit{Record: r, Snippet: lead(r.Content)})
	}
	return Ranked{Hits: hits, Cosine: cos}, nil
}

// candidates returns the entries of es whose ids are ids, in the order of
// ids (a repeated id once), and false when one of ids has none.
func candidates(es []*entry, ids []string) ([]*entry, bool) {
	if len(ids) == 0 {
		return nil, true
	}
	// Where each id is in out, by the id as entries hold it (packID): a
	// map for packed ids and one for others, so that no entry's id is
	// made as text.
	at := [2]map[string]int{{}, {}}
	n := 0
	for _, id := range ids {
		raw, packed := packID(id)
		if _, ok := at[b2i(packed)][raw]; !ok {
			at[b2i(packed)][raw] = n
			n++
		}
	}
	out := make([]*entry, n)
	found := 0
	for _, e := range es {
		if i, ok := at[b2i(e.flags&isPacked != 0)][e.rawID()]; ok && out[i] == nil {
			out[i] = e
			if found++; found == len(out) {
				break
			}
		}
	}
	return out, found == len(out)
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// snippetWords is how many words of its content a hit found by similarity
// alone shows (full text's snippets show about as many around the match).
const snippetWords = 24

// lead returns the first snippetWords words of content, with "…" when it
// goes on.
func lead(content string) string {
	words := strings.Fields(content)
	if len(words) <= snippetWords {
		return strings.Join(words, " ")
	}
	return strings.Join(words[:snippetWords], " ") + "…"
}
