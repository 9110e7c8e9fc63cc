package retrieval

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

// TestNearest holds the scan to its contract on entries of random unit
// vectors, in one part and split over processors: it returns the
// shortlist(k) entries with the highest approximate cosines, ties by id,
// in that order.
func TestNearest(t *testing.T) {
	// Not parallel: it sets GOMAXPROCS, which the whole process shares.
	const dim = 64
	rng := rand.New(rand.NewPCG(3, 4))
	// With every > 0, every every-th vector is a near copy of one (a text
	// stored again with a word changed): their scores are about equal.
	for _, c := range []struct{ n, every int }{{1, 0}, {50, 0}, {2*parallelScan + 17, 0}, {parallelScan + 500, 4}} {
		n := c.n
		es := make([]*entry, n)
		base := unit(rng, dim)
		for i := range es {
			v := unit(rng, dim)
			if c.every > 0 && i%c.every == 0 {
				v = nearCopy(rng, base)
			}
			es[i] = quantized(fmt.Sprintf("R%06d", i), v)
		}
		// An entry of another dimension is never a candidate.
		es = append(es, quantized("OTHER", unit(rng, dim/2)))
		for _, procs := range []int{1, 3} {
			for _, k := range []int{1, 5, 20} {
				t.Run(fmt.Sprintf("n=%d/every=%d/procs=%d/k=%d", n, c.every, procs, k), func(t *testing.T) {
					defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
					q := unit(rng, dim)
					if c.every > 0 {
						q = nearCopy(rng, base)
					}
					got := nearest(q, es, k)
					if want := bruteShortlist(q, es, k); !slices.Equal(got, want) {
						t.Fatalf("nearest: %d entries %v, want %d %v", len(got), ids(got), len(want), ids(want))
					}
				})
			}
		}
	}
	t.Run("none", func(t *testing.T) {
		if got := nearest(unit(rng, dim), nil, 5); got != nil {
			t.Fatalf("no entries: %v", ids(got))
		}
		if got := nearest(unit(rng, dim), []*entry{quantized("A", unit(rng, dim))}, 0); got != nil {
			t.Fatalf("k 0: %v", ids(got))
		}
	})
}

// TestNearest_Recall: the shortlist rescored exactly finds the exact top
// k of random unit vectors (the hardest case for a quantizer: no
// structure) but for a share of at most 0.01 (docs/operations.md).
func TestNearest_Recall(t *testing.T) {
	t.Parallel()
	const n, dim, k, queries = 4000, 256, 20, 12
	rng := rand.New(rand.NewPCG(21, 22))
	vecs := make([][]float32, n)
	es := make([]*entry, n)
	byEntry := make(map[*entry][]float32, n)
	for i := range es {
		vecs[i] = unit(rng, dim)
		es[i] = quantized(fmt.Sprintf("R%06d", i), vecs[i])
		byEntry[es[i]] = vecs[i]
	}
	found := 0
	for range queries {
		q := unit(rng, dim)
		short := nearest(q, es, k)
		cos := make([]float64, len(short))
		for i, e := range short {
			cos[i] = dot(q, byEntry[e])
		}
		var got []*entry
		for _, i := range topK(cos, k) {
			got = append(got, short[i])
		}
		for _, i := range exactTop(q, vecs, k) {
			if slices.Contains(got, es[i]) {
				found++
			}
		}
	}
	if recall := float64(found) / (queries * k); recall < 0.99 {
		t.Fatalf("recall@%d of the rescored shortlist %.4f, want ≥ 0.99", k, recall)
	}
}

// TestNearest_Ties: when more entries than the shortlist are about equally
// similar (copies of one text), the scan keeps those with the lowest ids,
// whichever part met them, and never more than maxRescore.
func TestNearest_Ties(t *testing.T) {
	// Not parallel: it sets GOMAXPROCS, which the whole process shares.
	const dim = 32
	rng := rand.New(rand.NewPCG(5, 6))
	same := unit(rng, dim)
	var es []*entry
	for i := range maxRescore + 1500 {
		es = append(es, quantized(fmt.Sprintf("C%06d", (i*7919)%(maxRescore+1500)), same))
	}
	for i := range 3000 {
		es = append(es, quantized(fmt.Sprintf("D%06d", i), unit(rng, dim)))
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for _, k := range []int{10, maxRescore} {
		got := nearest(same, es, k)
		if len(got) != shortlist(k) || shortlist(k) > maxRescore {
			t.Fatalf("k %d: %d candidates, want shortlist %d ≤ %d", k, len(got), shortlist(k), maxRescore)
		}
		want := make([]string, shortlist(k))
		for i := range want {
			want[i] = fmt.Sprintf("C%06d", i)
		}
		if g := ids(got); !slices.Equal(g, want) {
			t.Fatalf("k %d: kept %v…, want the copies by id %v…", k, g[:5], want[:5])
		}
	}
}

// nearCopy returns v moved by a little noise, as a unit vector.
func nearCopy(rng *rand.Rand, v []float32) []float32 {
	out := make([]float32, len(v))
	var s float64
	for i, x := range v {
		out[i] = x + float32(rng.NormFloat64()*1e-3)
		s += float64(out[i]) * float64(out[i])
	}
	for i := range out {
		out[i] = float32(float64(out[i]) / math.Sqrt(s))
	}
	return out
}

// quantized is an index entry for v, current, as the index makes one.
func quantized(id string, v []float32) *entry {
	codes, scale := quantize(nil, v)
	return withData(entry{flags: isLive | isCurrent, scale: scale, dim: uint16(len(v))}, string(codes), id)
}

// withData returns e in a slab of its own with codes and id as its data.
func withData(e entry, codes, id string) *entry {
	raw, packed := packID(id)
	if packed {
		e.flags |= isPacked
	}
	return new(slab).put(e, []byte(codes), idTail(raw, packed))
}

// bruteShortlist is the contract of nearest, spelled out: every entry of
// q's dimension by approximate cosine, highest first and ties by id, cut
// to shortlist(k).
func bruteShortlist(q []float32, es []*entry, k int) []*entry {
	var all []scored
	for _, e := range es {
		if int(e.dim) == len(q) {
			all = append(all, scored{e, e.scale * dotCodes(q, e.codes())})
		}
	}
	slices.SortFunc(all, byScore)
	var out []*entry
	for _, x := range all[:min(len(all), shortlist(k))] {
		out = append(out, x.e)
	}
	return out
}

// exactTop returns the indexes of the k vectors most similar to q.
func exactTop(q []float32, vecs [][]float32, k int) []int {
	cos := make([]float64, len(vecs))
	for i, v := range vecs {
		cos[i] = dot(q, v)
	}
	return topK(cos, k)
}

func ids(es []*entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.id()
	}
	return out
}

// TestIndex_Apply follows the entries through the changes the feed
// brings: new records, a record re-embedded, one moved to another
// namespace (a rename), one purged and one that comes back. After each
// step every namespace holds exactly its records (read from the entries
// of its namespace when it has few of them, from all of them when most),
// and every position the index keeps points at its entry.
func TestIndex_Apply(t *testing.T) {
	t.Parallel()
	x := NewIndex(nil)
	// Before it loads, the index cannot tell a vector's state: Counts says
	// so rather than count nothing (memory_status leaves the counts out).
	if c, ok := x.Counts(); ok || c != (Counts{}) {
		t.Errorf("Counts before loading = %+v, %v; want zero, false", c, ok)
	}
	x.reloading.Store(true)
	x.apply(nil, 0) // loaded, but reloading for a new key
	if _, ok := x.Counts(); ok {
		t.Errorf("Counts while reloading for a new key: counted")
	}
	x.reloading.Store(false)
	e := func(seq int64, id string) *entry {
		return withData(entry{seq: seq, flags: isLive | isCurrent, scale: 1, dim: 1}, "\x01", id)
	}
	put := func(seq int64, id, ns string) change { return change{e: e(seq, id), ns: ns} }
	gone := func(seq int64) change { return change{e: &entry{seq: seq}, gone: true} }
	steps := []struct {
		name    string
		changes []change
		want    map[string][]string // namespace → ids
	}{
		{"new", []change{put(1, "A1", "ns/a"), put(2, "A2", "ns/a"), put(3, "B3", "ns/b"), put(4, "A4", "ns/a")},
			map[string][]string{"ns/a": {"A1", "A2", "A4"}, "ns/b": {"B3"}}},
		{"re-embedded", []change{put(2, "A2", "ns/a")},
			map[string][]string{"ns/a": {"A1", "A2", "A4"}, "ns/b": {"B3"}}},
		{"moved", []change{put(1, "A1", "ns/c")},
			map[string][]string{"ns/a": {"A2", "A4"}, "ns/b": {"B3"}, "ns/c": {"A1"}}},
		{"purged", []change{gone(2), gone(99)},
			map[string][]string{"ns/a": {"A4"}, "ns/b": {"B3"}, "ns/c": {"A1"}}},
		{"moved twice and back", []change{put(3, "B3", "ns/a"), put(3, "B3", "ns/b"), put(5, "C5", "ns/c")},
			map[string][]string{"ns/a": {"A4"}, "ns/b": {"B3"}, "ns/c": {"A1", "C5"}}},
		{"the last of a namespace", []change{gone(4), put(1, "A1", "ns/b")},
			map[string][]string{"ns/a": nil, "ns/b": {"B3", "A1"}, "ns/c": {"C5"}}},
	}
	for i, s := range steps {
		x.apply(s.changes, int64(i+1))
		total := 0
		for ns, want := range s.want {
			es, _, _, err := x.collect(Query{Chain: []string{ns}})
			if err != nil {
				t.Fatalf("%s: collect %s: %v", s.name, ns, err)
			}
			got := ids(es)
			slices.Sort(got)
			want = slices.Sorted(slices.Values(want))
			if !slices.Equal(got, want) {
				t.Errorf("%s: %s holds %v, want %v", s.name, ns, got, want)
			}
			total += len(want)
		}
		inNS := 0
		for _, es := range x.byNS {
			inNS += len(es)
		}
		if len(x.list) != total || len(x.nsAt) != total || inNS != total {
			t.Errorf("%s: %d entries, %d namespace positions, %d entries by namespace, want %d",
				s.name, len(x.list), len(x.nsAt), inNS, total)
		}
		for i, e := range x.list {
			seq := e.seq
			if at, ok := x.find(seq); !ok || at != i {
				t.Errorf("%s: seq %d is at %d, found at %d (%v): the list is not by seq", s.name, seq, i, at, ok)
				continue
			}
			at, j := x.byNS[x.list[i].ns], x.nsAt[i]
			if int(j) >= len(at) || at[j] != int32(i) {
				t.Errorf("%s: the position of seq %d in its namespace, %d, points elsewhere", s.name, seq, j)
			}
		}
		if c, ok := x.Counts(); !ok || c.Current != total {
			t.Errorf("%s: Counts %+v (counted %v), want %d current", s.name, c, ok, total)
		}
	}
}

// TestIndex_CollectTypes: a search of some types collects the records of
// those types alone; one of no type a record can have collects none.
func TestIndex_CollectTypes(t *testing.T) {
	t.Parallel()
	x := NewIndex(nil)
	var changes []change
	for i, typ := range []string{storage.TypeDecision, storage.TypeNote, storage.TypeDecision, storage.TypeProcedure} {
		changes = append(changes, change{ns: "ns/a", e: withData(entry{seq: int64(i + 1),
			typ: typeCode(typ), flags: isLive | isCurrent, scale: 1, dim: 1}, "\x01", fmt.Sprintf("R%d", i+1))})
	}
	// A type the index does not know (none can be stored) matches no
	// search's types, not even its own name.
	changes = append(changes, change{ns: "ns/a", e: withData(entry{seq: 9, typ: typeCode("no-such-type"),
		flags: isLive | isCurrent, scale: 1, dim: 1}, "\x01", "R9")})
	x.apply(changes, 1)
	for _, c := range []struct {
		types []string
		want  []string
	}{
		{nil, []string{"R1", "R2", "R3", "R4", "R9"}},
		{[]string{storage.TypeDecision}, []string{"R1", "R3"}},
		{[]string{storage.TypeNote, storage.TypeProcedure}, []string{"R2", "R4"}},
		{[]string{storage.TypeSummary}, nil},
		{[]string{"no-such-type"}, nil},
	} {
		es, _, _, err := x.collect(Query{Chain: []string{"ns/a"}, Types: c.types})
		if err != nil {
			t.Fatalf("types %v: %v", c.types, err)
		}
		if got := slices.Sorted(slices.Values(ids(es))); !slices.Equal(got, c.want) {
			t.Errorf("types %v: collected %v, want %v", c.types, got, c.want)
		}
	}
}

// TestIndex_HeldBytes holds the index's memory a record to its count
// (docs/operations.md, "Vector memory"): its codes and id (the store's
// ids are ULIDs, which the index holds as their 16 bytes rather than
// their 26 characters), a 32-byte entry and 16 bytes of places in the
// lists, with a little to spare for the ends of chunks the slab filled;
// the unused end of its last chunks aside.
func TestIndex_HeldBytes(t *testing.T) {
	t.Parallel()
	const n, dim = 1000, 96
	db := storagetest.Open(t)
	ids, _ := storeVectors(t, db, n, dim, rand.New(rand.NewPCG(31, 32)))
	x := NewIndex(db)
	if err := x.SetKey(context.Background(), "m", "s"); err != nil {
		t.Fatal(err)
	}
	if c, ok := x.Counts(); !ok || c.Current != n {
		t.Fatalf("counts %+v (counted %v), want %d current", c, ok, n)
	}
	if _, packed := packID(ids[0]); !packed {
		t.Fatalf("the store made id %q, not a ULID in its canonical text", ids[0])
	}
	data := codeLen(dim) + len(ulid.ULID{})
	used := x.heldBytes() - x.slab.unused()
	if perRecord := float64(used) / n; perRecord > float64(data+32+16+2) {
		t.Fatalf("the index holds %.1f bytes a record, want at most %d of data and 50 more", perRecord, data)
	}
}

// TestIndex_Compact: vectors put again and again leave the entries they
// replaced in the slab's chunks until those are more than the live ones
// and than a chunk; then Sync copies the live entries into a new slab, of
// the size a load makes. Meanwhile searches scan, and after every sync
// each record's entry holds the codes of its latest vector.
func TestIndex_Compact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n, dim, rounds = 200, 32, 12
	db := storagetest.Open(t)
	rng := rand.New(rand.NewPCG(41, 42))
	ids, _ := storeVectors(t, db, n, dim, rng)
	x := NewIndex(db)
	if err := x.SetKey(ctx, "m", "s"); err != nil {
		t.Fatal(err)
	}
	loaded := x.heldBytes()
	q := unit(rng, dim)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if es, _, _, err := x.collect(Query{Chain: []string{"global"}}); err == nil && len(nearest(q, es, 5)) == 0 {
				t.Error("a scan during syncs found nothing")
				return
			}
		}
	})
	old, err := db.Embeddings(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	compacted := 0
	for round := range rounds {
		var batch []storage.Embedding
		latest := map[string][]float32{}
		for _, id := range ids {
			v := unit(rng, dim)
			latest[id] = v
			batch = append(batch, storage.Embedding{RecordID: id, Model: "m", Snapshot: "s", Vector: v, Digest: old[id].Digest})
		}
		if _, err := db.PutEmbeddings(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if err := x.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if dead := x.slab.made - n; dead > max(n, maxChunk) {
			t.Errorf("round %d: the slab holds %d replaced entries besides %d live ones", round, dead, n)
		} else if dead == 0 {
			compacted++
			if held := x.heldBytes(); held > loaded {
				t.Errorf("round %d: compacted, the index holds %d bytes, %d at its load", round, held, loaded)
			}
		}
		x.mu.RLock()
		for _, e := range x.list {
			codes, scale := quantize(nil, latest[e.id()])
			if e.codes() != string(codes) || e.scale != scale || !e.current() {
				t.Errorf("round %d: %s holds other codes than its latest vector's (current %v)", round, e.id(), e.current())
				break
			}
		}
		x.mu.RUnlock()
	}
	if compacted != 2 {
		t.Errorf("compacted %d times in %d rounds of %d replaced entries, want 2 (at more than %d)", compacted, rounds, n, maxChunk)
	}
}

// TestNearest_PrefixRecall: an index of the leading quarter of vectors
// whose leading coordinates carry most of their length (as those of a
// Matryoshka-trained encoder do) finds, rescored exactly with the whole
// vectors, the exact top k but for a small share (coding any other
// quarter finds almost none).
func TestNearest_PrefixRecall(t *testing.T) {
	t.Parallel()
	const n, dim, dims, k, queries = 4000, 256, 64, 20, 12
	rng := rand.New(rand.NewPCG(51, 52))
	// Each vector's leading coordinates are of a length of their own,
	// from a half to one and a half; the rest are 0.3 as large (a fifth
	// of the vector's squared length).
	matryoshka := func() []float32 {
		v := make([]float32, dim)
		lead := 0.5 + rng.Float64()
		for i := range v {
			w := lead
			if i >= dims {
				w = 0.3
			}
			v[i] = float32(rng.NormFloat64() * w)
		}
		s := math.Sqrt(dot(v, v))
		for i := range v {
			v[i] = float32(float64(v[i]) / s)
		}
		return v
	}
	x := NewPrefixIndex(nil, dims)
	vecs := make([][]float32, n)
	es := make([]*entry, n)
	byEntry := make(map[*entry][]float32, n)
	for i := range es {
		vecs[i] = matryoshka()
		codes, scale, coded := x.code(nil, vecs[i])
		if coded != dims || len(codes) != codeLen(dims) {
			t.Fatalf("coded %d coordinates in %d bytes, want %d in %d", coded, len(codes), dims, codeLen(dims))
		}
		es[i] = withData(entry{flags: isLive | isCurrent, scale: scale, dim: uint16(coded)}, string(codes), fmt.Sprintf("R%06d", i))
		byEntry[es[i]] = vecs[i]
	}
	found := 0
	for range queries {
		q := matryoshka()
		short := nearest(x.prefix(q), es, k)
		cos := make([]float64, len(short))
		for i, e := range short {
			cos[i] = dot(q, byEntry[e])
		}
		var got []*entry
		for _, i := range topK(cos, k) {
			got = append(got, short[i])
		}
		for _, i := range exactTop(q, vecs, k) {
			if slices.Contains(got, es[i]) {
				found++
			}
		}
	}
	if recall := float64(found) / (queries * k); recall < 0.98 {
		t.Fatalf("recall@%d of the rescored shortlist of %d leading coordinates %.4f, want ≥ 0.98", k, dims, recall)
	}
}

// TestEntry_IDs: an entry holds a ULID in its canonical text as its 16
// bytes and any other id as it is; either way it gives the id back, orders
// entries by id as the ids' text orders, and finds them by id and prefix
// (candidates, collect's exclusions).
func TestEntry_IDs(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(51, 52))
	var ids []string
	for range 40 {
		var u ulid.ULID
		for i := range u {
			u[i] = byte(rng.Uint32())
		}
		u[0] &= 0x3f // alike in their leading digits, some of them
		ids = append(ids, u.String())
	}
	ids = append(ids, strings.ToLower(ids[0]), "8ZZZZZZZZZZZZZZZZZZZZZZZZZ", "not-a-ulid", "01", ids[1][:25]+"!",
		strings.Repeat("a long id ", 30))
	var s slab
	var es []*entry
	for i, id := range ids {
		raw, packed := packID(id)
		if want := i < 40; packed != want {
			t.Fatalf("packID(%q) packed %v, want %v", id, packed, want)
		}
		if packed && len(raw) != len(ulid.ULID{}) {
			t.Fatalf("packID(%q) holds %d bytes, want 16", id, len(raw))
		}
		e := entry{seq: int64(i), dim: 3}
		if packed {
			e.flags |= isPacked
		}
		es = append(es, s.put(e, []byte{1, 2}, idTail(raw, packed)))
	}
	for i, e := range es {
		if e.id() != ids[i] || string(e.appendID(nil)) != ids[i] || e.codes() != "\x01\x02" {
			t.Errorf("entry %d gives id %q and codes %q, want %q and 1, 2", i, e.id(), e.codes(), ids[i])
		}
		if moved := s.put(*e, nil, e.bytes()); moved.id() != ids[i] || moved.codes() != e.codes() { // as compact moves it
			t.Errorf("entry %d moved gives id %q and codes %q, want %q and 1, 2", i, moved.id(), moved.codes(), ids[i])
		}
		for j, f := range es {
			if got, want := compareIDs(e, f), strings.Compare(ids[i], ids[j]); got != want {
				t.Errorf("compareIDs(%q, %q) = %d, want %d", ids[i], ids[j], got, want)
			}
		}
	}
	want := []string{ids[41], ids[3], ids[0], ids[40], ids[3]}
	got, ok := candidates(es, want)
	if !ok || len(got) != 4 || got[0] != es[41] || got[1] != es[3] || got[2] != es[0] || got[3] != es[40] {
		t.Errorf("candidates(%q) found %v, ok %v", want, got, ok)
	}
	if _, ok := candidates(es, []string{ulid.Make().String()}); ok {
		t.Error("candidates found an id no entry holds")
	}
}
