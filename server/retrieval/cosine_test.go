package retrieval_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/server/encoder"
	"github.com/hearth-memory/hearth/server/models/modeltest"
	"github.com/hearth-memory/hearth/server/ranking"
	"github.com/hearth-memory/hearth/server/retrieval"
	"github.com/hearth-memory/hearth/server/workers"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

const testModel = "qwen3-emb-0.6b"

// rig is a store, a llama-server test encoder (real wire format over TCP),
// the real encoder client, the vector index, the embedder and the
// pipeline with the cosine list.
type rig struct {
	db   *storage.DB
	srv  *modeltest.Server
	enc  *encoder.Encoder
	idx  *retrieval.Index
	emb  *workers.Embedder
	pipe *retrieval.Pipeline
	dim  int
}

func newRig(t *testing.T, dim int, timeout time.Duration) *rig {
	t.Helper()
	return rigOn(t, storagetest.Open(t), newEncoderServer(t, dim), dim, timeout)
}

// newEncoderServer starts a llama-server test encoder of dim dimensions.
func newEncoderServer(t *testing.T, dim int) *modeltest.Server {
	t.Helper()
	return modeltest.New(t, modeltest.LlamaServer, modeltest.Model{Path: "/models/emb-v1.gguf", Dim: dim})
}

// rigOn is a rig over db with an encoder client of its own for srv: one
// front end, as a hearth serve process has its own.
func rigOn(t *testing.T, db *storage.DB, srv *modeltest.Server, dim int, timeout time.Duration) *rig {
	t.Helper()
	r := &rig{db: db, srv: srv, dim: dim}
	r.enc = r.encoder(t, testModel, timeout)
	r.use(retrieval.NewIndex(r.db))
	return r
}

// use makes idx the rig's index, with an embedder and pipeline over it.
func (r *rig) use(idx *retrieval.Index) {
	r.idx = idx
	r.emb = workers.NewEmbedder(workers.EmbedderConfig{DB: r.db, Encoder: r.enc, Index: r.idx, Batch: 7})
	r.pipe = retrieval.New(r.db, retrieval.Cosine{DB: r.db, Encoder: r.enc, Index: r.idx})
}

func (r *rig) encoder(t *testing.T, model string, timeout time.Duration) *encoder.Encoder {
	t.Helper()
	enc, err := encoder.New(encoder.Config{URL: r.srv.URL, Model: model, Timeout: timeout, MaxBatch: 3})
	if err != nil {
		t.Fatal(err)
	}
	enc.Poll(context.Background())
	if !enc.Live() {
		t.Fatalf("encoder not live: %+v", enc.Status())
	}
	return enc
}

func (r *rig) store(t *testing.T, ns, title, content string) *storage.Record {
	t.Helper()
	return storagetest.Store(t, r.db, storage.NewRecord{Namespace: ns, Type: storage.TypeDecision,
		Title: storagetest.Text(t, title), Content: storagetest.Text(t, content), Confidence: 0.8,
		Writer: "claude-code", Source: storage.SourceStore, Status: storage.StatusActive})
}

// pass runs one embedding pass and returns how many vectors it stored.
func (r *rig) pass(t *testing.T) int {
	t.Helper()
	n, err := r.emb.Pass(context.Background())
	if err != nil {
		t.Fatalf("embedding pass: %v", err)
	}
	return n
}

// want is the exact cosine the test server's vectors give query and rec.
func (r *rig) want(query string, rec *storage.Record) float64 {
	q := modeltest.Vector(encoder.QueryText(query), r.dim)
	v := modeltest.Vector(encoder.RecordText(rec.Title, rec.Content), r.dim)
	var s float64
	for i := range q {
		s += float64(q[i]) * float64(v[i])
	}
	return s
}

func (r *rig) digest(t *testing.T, id string) storage.Embedding {
	t.Helper()
	got, err := r.db.Embeddings(context.Background(), []string{id})
	if err != nil {
		t.Fatal(err)
	}
	return got[id]
}

var webhookRecords = [][2]string{
	{"retry webhooks with backoff", "failed webhook deliveries retry with exponential backoff"},
	{"webhooks deliver events", "each event is delivered to every webhook"},
	{"cache invalidation", "the cache is invalidated on every write"},
	{"release procedure", "tag, build, sign and publish the release"},
}

func TestCosine_Rank(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		r := newRig(t, 48, 2*time.Second)
		var recs []*storage.Record
		for _, rc := range webhookRecords {
			recs = append(recs, r.store(t, "global", rc[0], rc[1]))
		}
		if n := r.pass(t); n != len(recs) {
			t.Fatalf("pass stored %d vectors, want %d", n, len(recs))
		}
		q := retrieval.Query{Text: "retry webhooks", Chain: []string{"global"}, Depth: 20}
		res, err := r.pipe.Run(ctx, q)
		if err != nil || res.Mode != ranking.ModeRRF || res.Fallback != nil {
			t.Fatalf("Run = %s (fallback %v), %v; want rrf", res.Mode, res.Fallback, err)
		}
		// Every record in scope is in the cosine list (4 < depth), so every
		// hit has its exact cosine, and the cosine list is ordered by it.
		if len(res.Hits) != len(recs) {
			t.Fatalf("got %d hits, want %d", len(res.Hits), len(recs))
		}
		byCos := slices.Clone(recs)
		slices.SortFunc(byCos, func(a, b *storage.Record) int {
			if d := r.want(q.Text, b) - r.want(q.Text, a); d != 0 {
				return int(math.Copysign(1, d))
			}
			return strings.Compare(a.ID, b.ID)
		})
		for _, h := range res.Hits {
			if !h.HasCosine || math.Abs(h.Cosine-r.want(q.Text, h.Record)) > 1e-6 {
				t.Errorf("%s: cosine %v (%v), want %v", h.Record.Title, h.Cosine, h.HasCosine, r.want(q.Text, h.Record))
			}
			pos := slices.IndexFunc(byCos, func(x *storage.Record) bool { return x.ID == h.Record.ID }) + 1
			if !strings.Contains(h.Why, fmt.Sprintf("cosine #%d", pos)) {
				t.Errorf("%s: why %q, want cosine #%d", h.Record.Title, h.Why, pos)
			}
		}
		if !strings.Contains(res.Hits[0].Why, "fts #") {
			t.Errorf("first hit why %q: want it held by both lists", res.Hits[0].Why)
		}

		// Cosine alone, asked by name.
		q.Mode = ranking.ModeCosine
		res, err = r.pipe.Run(ctx, q)
		if err != nil || res.Mode != ranking.ModeCosine {
			t.Fatalf("cosine alone: %s, %v", res.Mode, err)
		}
		for i, h := range res.Hits {
			if h.Record.ID != byCos[i].ID {
				t.Errorf("cosine alone #%d = %s, want %s", i+1, h.Record.Title, byCos[i].Title)
			}
		}
	})

	// Prefix: an index of each vector's leading coordinates scans with the
	// query's as many, and ranks what it shortlists by the whole vectors'
	// exact cosines.
	t.Run("Prefix", func(t *testing.T) {
		r := newRig(t, 48, 2*time.Second)
		r.use(retrieval.NewPrefixIndex(r.db, 16))
		var recs []*storage.Record
		for _, rc := range webhookRecords {
			recs = append(recs, r.store(t, "global", rc[0], rc[1]))
		}
		r.pass(t)
		q := retrieval.Query{Text: "retry webhooks", Chain: []string{"global"}, Depth: 20, Mode: ranking.ModeCosine}
		res, err := r.pipe.Run(ctx, q)
		if err != nil || res.Mode != ranking.ModeCosine || len(res.Hits) != len(recs) {
			t.Fatalf("Run = %s with %d hits, %v; want cosine with %d", res.Mode, len(res.Hits), err, len(recs))
		}
		for i, h := range res.Hits {
			if !h.HasCosine || math.Abs(h.Cosine-r.want(q.Text, h.Record)) > 1e-6 {
				t.Errorf("%s: cosine %v (%v), want %v", h.Record.Title, h.Cosine, h.HasCosine, r.want(q.Text, h.Record))
			}
			if i > 0 && h.Cosine > res.Hits[i-1].Cosine {
				t.Errorf("#%d %s: cosine %v above the one before it", i+1, h.Record.Title, h.Cosine)
			}
		}
	})

	// OKExact checks that the int8 scan with float rescoring gives exactly
	// the top of a brute-force float ranking, at each depth.
	t.Run("OKExact", func(t *testing.T) {
		r := newRig(t, 64, 2*time.Second)
		var recs []*storage.Record
		for i := range 150 {
			recs = append(recs, r.store(t, "global", fmt.Sprintf("record %d", i), fmt.Sprintf("content of record number %d", i*7)))
		}
		r.pass(t)
		for _, query := range []string{"how do we deploy", "record number", "zzz"} {
			for _, depth := range []int{1, 5, 20, 50} {
				res, err := r.pipe.Run(ctx, retrieval.Query{Text: query, Chain: []string{"global"}, Depth: depth, Mode: ranking.ModeCosine})
				if err != nil {
					t.Fatal(err)
				}
				all := slices.Clone(recs)
				slices.SortFunc(all, func(a, b *storage.Record) int {
					if d := r.want(query, b) - r.want(query, a); d != 0 {
						return int(math.Copysign(1, d))
					}
					return strings.Compare(a.ID, b.ID)
				})
				if len(res.Hits) != depth {
					t.Fatalf("%q depth %d: %d hits", query, depth, len(res.Hits))
				}
				for i, h := range res.Hits {
					if h.Record.ID != all[i].ID {
						t.Errorf("%q depth %d: #%d = %s, want %s", query, depth, i+1, h.Record.Title, all[i].Title)
						break
					}
				}
			}
		}
	})

	// Known: the records an earlier list found get their exact cosine
	// whether or not they are among the most similar, and one that is not
	// a candidate (out of scope, or unknown to the index) makes the list
	// step aside, as when the index changed between the two reads.
	t.Run("Known", func(t *testing.T) {
		r := newRig(t, 64, 2*time.Second)
		var recs []*storage.Record
		for i := range 40 {
			recs = append(recs, r.store(t, "global", fmt.Sprintf("record %d", i), fmt.Sprintf("content of record number %d", i*7)))
		}
		other := r.store(t, "github/acme/other", "elsewhere", "a record outside the chain")
		r.pass(t)
		cos := retrieval.Cosine{DB: r.db, Encoder: r.enc, Index: r.idx}
		const query = "how do we deploy"
		// The least similar records, which a depth of 2 leaves out, twice.
		least := slices.Clone(recs)
		slices.SortFunc(least, func(a, b *storage.Record) int { return cmp.Compare(r.want(query, a), r.want(query, b)) })
		known := []string{least[0].ID, least[1].ID, least[0].ID}
		got, err := cos.Rank(ctx, retrieval.Query{Text: query, Chain: []string{"global"}, Depth: 2, Known: known})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Hits) != 2 {
			t.Fatalf("%d hits, want 2", len(got.Hits))
		}
		for _, rec := range append([]*storage.Record{got.Hits[0].Record, got.Hits[1].Record}, least[0], least[1]) {
			if c, ok := got.Cosine[rec.ID]; !ok || math.Abs(c-r.want(query, rec)) > 1e-6 {
				t.Errorf("%s: cosine %v (%v), want %v", rec.Title, c, ok, r.want(query, rec))
			}
		}
		for _, id := range []string{other.ID, "01JUNKNOWNRECORD0000000000"} {
			_, err := cos.Rank(ctx, retrieval.Query{Text: query, Chain: []string{"global"}, Depth: 2, Known: []string{least[0].ID, id}})
			if !errors.Is(err, retrieval.ErrNotCurrent) {
				t.Errorf("known %s, not a candidate: %v, want ErrNotCurrent", id, err)
			}
		}
	})

	t.Run("OKMinCosineExcludeTypes", func(t *testing.T) {
		r := newRig(t, 48, 2*time.Second)
		var recs []*storage.Record
		for _, rc := range webhookRecords {
			recs = append(recs, r.store(t, "global", rc[0], rc[1]))
		}
		r.pass(t)
		query := "webhooks retry cache release"
		base := retrieval.Query{Text: query, Chain: []string{"global"}, Depth: 20}
		cos := map[string]float64{}
		for _, rec := range recs {
			cos[rec.ID] = r.want(query, rec)
		}
		sorted := slices.Sorted(func(yield func(float64) bool) {
			for _, c := range cos {
				if !yield(c) {
					return
				}
			}
		})
		min := sorted[len(sorted)/2] // keeps the more similar half
		q := base
		q.MinCosine = &min
		res, err := r.pipe.Run(ctx, q)
		if err != nil || res.Mode != ranking.ModeRRF {
			t.Fatal(res.Mode, err)
		}
		var want []string
		for id, c := range cos {
			if c >= min {
				want = append(want, id)
			}
		}
		var got []string
		for _, h := range res.Hits {
			got = append(got, h.Record.ID)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("min_cosine %v kept %v, want %v", min, got, want)
		}

		// exclude: an 8-character prefix drops the record from both lists;
		// a 7-character one is ignored.
		q = base
		// (Records made in one millisecond share their first 10 characters.)
		q.Exclude = []string{strings.ToLower(recs[0].ID[:24]), recs[1].ID[:7]}
		res, _ = r.pipe.Run(ctx, q)
		for _, h := range res.Hits {
			if h.Record.ID == recs[0].ID {
				t.Errorf("excluded record %s returned (why %q)", h.Record.Title, h.Why)
			}
		}
		if res.Mode != ranking.ModeRRF || len(res.Hits) != len(recs)-1 {
			t.Errorf("exclude: %s with %d hits, want rrf with %d", res.Mode, len(res.Hits), len(recs)-1)
		}

		// types: a record of another type is neither returned nor required
		// to have a vector.
		other := storagetest.Store(t, r.db, storage.NewRecord{Namespace: "global", Type: storage.TypeProcedure,
			Title: storagetest.Text(t, "webhook procedure"), Content: storagetest.Text(t, "x"), Confidence: 0.8,
			Writer: "claude-code", Source: storage.SourceStore, Status: storage.StatusActive})
		q = base
		q.Types = []string{storage.TypeDecision}
		if res, _ = r.pipe.Run(ctx, q); res.Mode != ranking.ModeRRF {
			t.Errorf("types: %s (%v), want rrf: the unembedded %s is of another type", res.Mode, res.Fallback, other.Type)
		}
	})
}

// TestCosine_Fallback checks every condition under which search ranks by
// full text alone (R-K3), and that min_cosine then drops no hit (R-K4).
func TestCosine_Fallback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	setup := func(t *testing.T, timeout time.Duration) (*rig, retrieval.Query) {
		r := newRig(t, 32, timeout)
		for _, rc := range webhookRecords {
			r.store(t, "global", rc[0], rc[1])
		}
		r.pass(t)
		q := retrieval.Query{Text: "retry webhooks", Chain: []string{"global"}, Depth: 20}
		if res, err := r.pipe.Run(ctx, q); err != nil || res.Mode != ranking.ModeRRF {
			t.Fatalf("before: %s (%v), %v; want rrf", res.Mode, res.Fallback, err)
		}
		return r, q
	}
	fallsBack := func(t *testing.T, r *rig, q retrieval.Query, why error) {
		t.Helper()
		res, err := r.pipe.Run(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if res.Mode != ranking.ModeFTS || !errors.Is(res.Fallback, why) {
			t.Errorf("got %s (fallback %v), want fts because %v", res.Mode, res.Fallback, why)
		}
		for _, h := range res.Hits {
			if h.HasCosine || strings.Contains(h.Why, "cosine") {
				t.Errorf("fts hit %s carries cosine %v / why %q", h.Record.Title, h.Cosine, h.Why)
			}
		}
		// Under full text min_cosine drops nothing: no hit has a cosine.
		min := 0.99
		q.MinCosine = &min
		if got, _ := r.pipe.Run(ctx, q); got.Mode != ranking.ModeFTS || len(got.Hits) != len(res.Hits) {
			t.Errorf("min_cosine under fts: %s with %d hits, want fts with all %d", got.Mode, len(got.Hits), len(res.Hits))
		}
		// (A call that timed out marks the encoder down until its next
		// probe: later searches step aside for that reason.)
		q.MinCosine, q.Mode = nil, ranking.ModeCosine
		if _, err := r.pipe.Run(ctx, q); !errors.Is(err, why) && !errors.Is(err, retrieval.ErrEncoderDown) {
			t.Errorf("cosine alone: %v, want %v", err, why)
		}
	}

	t.Run("EncoderNeverProbed", func(t *testing.T) {
		r, q := setup(t, 2*time.Second)
		enc, err := encoder.New(encoder.Config{URL: r.srv.URL, Model: testModel})
		if err != nil {
			t.Fatal(err)
		}
		r.pipe = retrieval.New(r.db, retrieval.Cosine{DB: r.db, Encoder: enc, Index: r.idx})
		fallsBack(t, r, q, retrieval.ErrEncoderDown)
	})
	t.Run("EncoderDown", func(t *testing.T) {
		r, q := setup(t, 2*time.Second)
		r.srv.Down()
		// The first call finds it not answering; then it is down until the
		// next probe, and no call is made.
		res, _ := r.pipe.Run(ctx, q)
		if res.Mode != ranking.ModeFTS || !errors.Is(res.Fallback, retrieval.ErrQueryVector) {
			t.Fatalf("first search: %s (%v), want fts", res.Mode, res.Fallback)
		}
		fallsBack(t, r, q, retrieval.ErrEncoderDown)
	})
	t.Run("QueryVectorLate", func(t *testing.T) {
		r, q := setup(t, 100*time.Millisecond)
		r.srv.Script(modeltest.Rule{Path: r.srv.EmbedPath(), Action: modeltest.Action{Delay: time.Second}})
		fallsBack(t, r, q, retrieval.ErrQueryVector)
	})
	t.Run("RecordWithoutVector", func(t *testing.T) {
		r, q := setup(t, 2*time.Second)
		// Out of scope: no matter.
		r.store(t, "github/acme/api", "webhooks elsewhere", "not in the chain")
		if res, _ := r.pipe.Run(ctx, q); res.Mode != ranking.ModeRRF {
			t.Fatalf("a record out of scope without a vector: %s (%v), want rrf", res.Mode, res.Fallback)
		}
		r.store(t, "global", "new record", "not embedded yet")
		fallsBack(t, r, q, retrieval.ErrNotCurrent)
		r.pass(t)
		if res, _ := r.pipe.Run(ctx, q); res.Mode != ranking.ModeRRF {
			t.Errorf("after the pass: %s (%v), want rrf", res.Mode, res.Fallback)
		}
	})
	t.Run("SecretQuery", func(t *testing.T) {
		r, q := setup(t, 2*time.Second)
		secret := "ghp_" + strings.Repeat("A1b2C3d4E5", 4)[:36]
		if _, err := screen.Check("query", "webhooks "+secret); err == nil {
			t.Fatal("the test secret does not screen as one")
		}
		before := len(r.srv.Requests())
		q.Text = "webhooks " + secret
		fallsBack(t, r, q, retrieval.ErrSecretQuery)
		for _, req := range r.srv.Requests() {
			if strings.Contains(string(req.Body), "ghp_") || strings.Contains(req.Path, "ghp_") {
				t.Fatalf("the secret reached the encoder: %s %s", req.Path, req.Body)
			}
		}
		if after := len(r.srv.Requests()); after != before {
			t.Errorf("the encoder got %d requests during secret searches, want 0", after-before)
		}
	})
}

// TestEmbedder_Digest checks that a vector's digest changes on an edit, on
// another model and on another snapshot (R-M9), each making search fall
// back until the embedder re-embeds.
func TestEmbedder_Digest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, 32, 2*time.Second)
	a := r.store(t, "global", "retry webhooks", "with backoff")
	b := r.store(t, "global", "cache", "invalidate on write")
	r.pass(t)
	q := retrieval.Query{Text: "webhooks", Chain: []string{"global"}, Depth: 20}
	want := func(model, snapshot string, rec *storage.Record) string {
		return encoder.Digest(model, snapshot, encoder.RecordText(rec.Title, rec.Content))
	}
	if got := r.digest(t, a.ID); got.Digest != want(testModel, "emb-v1.gguf", a) || got.Snapshot != "emb-v1.gguf" {
		t.Fatalf("digest = %+v, want model %s snapshot emb-v1.gguf", got, testModel)
	}

	t.Run("Edit", func(t *testing.T) {
		old := r.digest(t, a.ID).Digest
		content := storagetest.Text(t, "with jittered backoff")
		up, err := r.db.Update(ctx, a.ID, a.Revision, storage.Changes{Content: &content}, "claude-code")
		if err != nil {
			t.Fatal(err)
		}
		if res, _ := r.pipe.Run(ctx, q); res.Mode != ranking.ModeFTS || !errors.Is(res.Fallback, retrieval.ErrNotCurrent) {
			t.Errorf("after the edit: %s (%v), want fts", res.Mode, res.Fallback)
		}
		if n := r.pass(t); n != 1 {
			t.Errorf("pass re-embedded %d, want 1", n)
		}
		got := r.digest(t, a.ID).Digest
		if got == old || got != want(testModel, "emb-v1.gguf", up) {
			t.Errorf("digest after edit = %s (was %s), want %s", got, old, want(testModel, "emb-v1.gguf", up))
		}
		a = up
		if res, _ := r.pipe.Run(ctx, q); res.Mode != ranking.ModeRRF {
			t.Errorf("after re-embedding: %s (%v)", res.Mode, res.Fallback)
		}
	})
	t.Run("Snapshot", func(t *testing.T) {
		r.srv.SetModels(modeltest.Model{Path: "/models/emb-v2.gguf", Dim: 32})
		r.store(t, "global", "new", "brings a pass that reads the snapshot")
		r.pass(t)
		for _, rec := range []*storage.Record{a, b} {
			got := r.digest(t, rec.ID)
			if got.Snapshot != "emb-v2.gguf" || got.Digest != want(testModel, "emb-v2.gguf", rec) {
				t.Errorf("%s after the snapshot change: %+v, want snapshot emb-v2.gguf", rec.Title, got)
			}
		}
		if res, _ := r.pipe.Run(ctx, q); res.Mode != ranking.ModeRRF {
			t.Errorf("after re-embedding: %s (%v)", res.Mode, res.Fallback)
		}
	})
	t.Run("Model", func(t *testing.T) {
		enc := r.encoder(t, "other-embedder", 2*time.Second)
		pipe := retrieval.New(r.db, retrieval.Cosine{DB: r.db, Encoder: enc, Index: r.idx})
		emb := workers.NewEmbedder(workers.EmbedderConfig{DB: r.db, Encoder: enc, Index: r.idx})
		if res, _ := pipe.Run(ctx, q); res.Mode != ranking.ModeFTS {
			t.Errorf("vectors of another model: %s, want fts", res.Mode)
		}
		if _, err := emb.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if got := r.digest(t, b.ID); got.Model != "other-embedder" || got.Digest != want("other-embedder", "emb-v2.gguf", b) {
			t.Errorf("after the model change: %+v", got)
		}
		if res, _ := pipe.Run(ctx, q); res.Mode != ranking.ModeRRF {
			t.Errorf("after re-embedding: %s (%v)", res.Mode, res.Fallback)
		}
	})
}

// TestCosine_Rename: the records a rename moves (R-N6) are found by
// similarity under their new namespace and no longer under the old one,
// from the next search on, with no re-embedding (their text is the same).
func TestCosine_Rename(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, 48, 2*time.Second)
	var moved []string
	for _, rc := range webhookRecords[:2] {
		moved = append(moved, r.store(t, "github/acme/api", rc[0], rc[1]).ID)
	}
	stay := r.store(t, "github/other/api", webhookRecords[2][0], webhookRecords[2][1]).ID
	// Most records lie elsewhere, so that a search of one repository
	// reads that repository's own entries.
	for i := range 6 {
		rc := webhookRecords[i%len(webhookRecords)]
		r.store(t, "github/other/web", rc[0], fmt.Sprintf("%s, case %d", rc[1], i))
	}
	r.pass(t)
	found := func(ns string) []string {
		t.Helper()
		res, err := r.pipe.Run(ctx, retrieval.Query{Text: "retry webhooks", Chain: []string{ns}, Depth: 20, Mode: ranking.ModeCosine})
		if err != nil {
			t.Fatalf("search %s: %v", ns, err)
		}
		var ids []string
		for _, h := range res.Hits {
			ids = append(ids, h.Record.ID)
		}
		slices.Sort(ids)
		return ids
	}
	slices.Sort(moved)
	if got := found("github/acme/api"); !slices.Equal(got, moved) {
		t.Fatalf("before the rename: %v, want %v", got, moved)
	}
	if _, err := r.db.RenameNamespaces(ctx, []storage.Rename{{From: "github/acme", To: "github/newco"}}); err != nil {
		t.Fatal(err)
	}
	for ns, want := range map[string][]string{"github/newco/api": moved, "github/acme/api": nil, "github/other/api": {stay}} {
		if got := found(ns); !slices.Equal(got, want) {
			t.Errorf("after the rename, %s: %v, want %v", ns, got, want)
		}
	}
	if n := r.pass(t); n != 0 {
		t.Errorf("the pass after the rename embedded %d records, want none", n)
	}
}

// TestCosine_Restart: a server started again on a store whose vectors are
// all current (a new encoder client, index and embedder on the same
// store) ranks by cosine from its first pass, which embeds nothing: the
// pass's read of the model snapshot keys the query vectors, as a batch's
// read does.
func TestCosine_Restart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, 32, 2*time.Second)
	for _, rc := range webhookRecords {
		r.store(t, "global", rc[0], rc[1])
	}
	r.pass(t)
	q := retrieval.Query{Text: "retry webhooks", Chain: []string{"global"}, Depth: 20}
	before, err := r.pipe.Run(ctx, q)
	if err != nil || before.Mode != ranking.ModeRRF {
		t.Fatalf("before the restart: %s (%v), %v; want rrf", before.Mode, before.Fallback, err)
	}
	again := rigOn(t, r.db, r.srv, r.dim, 2*time.Second)
	if n := again.pass(t); n != 0 {
		t.Errorf("the first pass after the restart stored %d vectors, want 0", n)
	}
	after, err := again.pipe.Run(ctx, q)
	if err != nil || after.Mode != ranking.ModeRRF || after.Fallback != nil {
		t.Fatalf("after the restart: %s (%v), %v; want rrf", after.Mode, after.Fallback, err)
	}
	if !slices.Equal(ids(after.Hits), ids(before.Hits)) {
		t.Errorf("after the restart: %v, want %v as before", ids(after.Hits), ids(before.Hits))
	}
}
