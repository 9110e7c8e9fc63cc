package retrieval

import (
	"cmp"
	"context"
	"errors"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hearth-memory/hearth/server/encoder"
	"github.com/hearth-memory/hearth/storage"
)

// Index is the in-memory copy of the record vectors that the cosine list
// scans: for every record, its scope, type, liveness and whether its vector
// is current, and the vector itself quantized to int8 with one scale per
// vector (a quarter of float32's memory). The float32 vectors stay in the
// store; a scan reads the few it needs to give exact cosines (see Scan).
//
// The copy keeps in step with the store through its change feed
// (storage.VectorChanges): Sync applies every change committed since the
// last one, so a search that syncs before it scans sees every write that
// committed before it. Readers never wait on the store's writer; syncs take
// turns, and a scan holds the index only while it collects its
// candidates.
//
// A vector is current when its digest is the one the record's text gives
// under the index's key: the encoder's model and the snapshot the embedder
// last read (SetKey). A new key makes every vector stale until re-embedded.
type Index struct {
	db *storage.DB

	syncMu    sync.Mutex // one Sync or SetKey at a time
	reloading atomic.Bool

	mu      sync.RWMutex // guards what follows
	loaded  bool
	version int64
	model   string
	snap    string
	list    []*entry
	pos     map[int64]int // seq → index in list
	// byNS holds the entries of each namespace, by its id (nsID), so that
	// a search of a few namespaces collects its candidates from them
	// alone; nsAt[i] is where list[i] is in its namespace's. A search
	// that reaches most records reads list, in the order the entries were
	// loaded (and so lie in memory): by namespace, the scan of 100,000
	// vectors took two fifths more time.
	byNS    [][]*entry
	nsAt    []int32
	nsID    map[string]int32
	nsNames []string
}

// entry is one record as the index knows it. Entries are never changed
// once in the index: a change replaces the entry, so a scan may read the
// entries it collected without the lock.
type entry struct {
	seq  int64
	id   string
	ns   int32
	typ  string
	live bool
	// digest keys the stored vector ("" for none); current says it is the
	// digest the record's text gives under the index's key.
	digest  string
	current bool
	// codes ≈ vector/scale; resid is |vector - scale·codes|.
	codes        []int8
	scale, resid float32
}

// NewIndex returns an empty index over db; Sync loads it.
func NewIndex(db *storage.DB) *Index {
	return &Index{db: db, pos: map[int64]int{}, nsID: map[string]int32{}}
}

// Key returns the model and snapshot vectors are current for.
func (x *Index) Key() (model, snapshot string) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.model, x.snap
}

// Version returns the change feed version the index has applied.
func (x *Index) Version() int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.version
}

// Loaded reports whether the index was loaded and no reload for a new key
// is under way: only then can it say whether vectors are current.
func (x *Index) Loaded() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.ready()
}

// ready is Loaded for a caller that holds x.mu.
func (x *Index) ready() bool { return x.loaded && !x.reloading.Load() }

// SetKey makes model and snapshot the key vectors must have been made
// under to be current, loading the index the first time. A different key
// reloads the index from the store (every vector's currency changes);
// meanwhile Loaded is false, so searches rank by full text rather than
// wait for the load.
func (x *Index) SetKey(ctx context.Context, model, snapshot string) error {
	x.mu.RLock()
	same := x.loaded && x.model == model && x.snap == snapshot
	x.mu.RUnlock()
	if same {
		return nil
	}
	x.reloading.Store(true)
	defer x.reloading.Store(false)
	x.syncMu.Lock()
	defer x.syncMu.Unlock()
	entries, version, err := x.read(ctx, 0, model, snapshot)
	if err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.model, x.snap = model, snapshot
	x.list, x.nsAt, x.pos, x.version = x.list[:0], x.nsAt[:0], map[int64]int{}, 0
	for i := range x.byNS {
		x.byNS[i] = nil
	}
	x.apply(entries, version)
	return nil
}

// Sync applies the store's changes since the last Sync. Before SetKey
// first loaded the index it does nothing.
func (x *Index) Sync(ctx context.Context) error {
	if !x.Loaded() {
		return nil
	}
	x.syncMu.Lock()
	defer x.syncMu.Unlock()
	x.mu.RLock()
	since, model, snap := x.version, x.model, x.snap
	x.mu.RUnlock()
	entries, version, err := x.read(ctx, since, model, snap)
	if err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.apply(entries, version)
	return nil
}

// change is an entry read from the feed, or a purged record (gone).
type change struct {
	e    *entry
	ns   string
	gone bool
}

// read reads the feed above since and builds the entries it brings, with
// currency under model and snapshot. It runs outside x.mu.
func (x *Index) read(ctx context.Context, since int64, model, snapshot string) ([]change, int64, error) {
	var out []change
	version, err := x.db.VectorChanges(ctx, since, true, func(c storage.VectorChange) error {
		if c.Gone {
			out = append(out, change{e: &entry{seq: c.Seq}, gone: true})
			return nil
		}
		e := &entry{seq: c.Seq, id: c.ID, typ: c.Type, live: c.Status == storage.StatusActive || c.Status == storage.StatusCandidate}
		if c.Digest != "" && len(c.Vector) > 0 {
			e.digest = c.Digest
			e.codes, e.scale, e.resid = quantize(c.Vector)
			e.current = model != "" && c.Model == model && c.Snapshot == snapshot &&
				c.Digest == encoder.Digest(model, snapshot, encoder.RecordText(c.Title, c.Content))
		}
		out = append(out, change{e: e, ns: c.Namespace})
		return nil
	})
	return out, version, err
}

// apply puts changes into the index and moves it to version. x.mu held.
func (x *Index) apply(changes []change, version int64) {
	for _, c := range changes {
		i, ok := x.pos[c.e.seq]
		if c.gone {
			if ok {
				x.leaveNS(i)
				last := len(x.list) - 1
				x.list[i], x.nsAt[i] = x.list[last], x.nsAt[last]
				x.pos[x.list[i].seq] = i
				x.list[last] = nil
				x.list, x.nsAt = x.list[:last], x.nsAt[:last]
				delete(x.pos, c.e.seq)
			}
			continue
		}
		id, ok2 := x.nsID[c.ns]
		if !ok2 {
			id = int32(len(x.nsNames))
			x.nsNames = append(x.nsNames, c.ns)
			x.nsID[c.ns] = id
			x.byNS = append(x.byNS, nil)
		}
		c.e.ns = id
		switch {
		case ok && x.list[i].ns == id:
			x.list[i] = c.e
			x.byNS[id][x.nsAt[i]] = c.e
			continue
		case ok: // moved to another namespace (a rename)
			x.leaveNS(i)
			x.list[i] = c.e
		default:
			i = len(x.list)
			x.pos[c.e.seq] = i
			x.list = append(x.list, c.e)
			x.nsAt = append(x.nsAt, 0)
		}
		x.nsAt[i] = int32(len(x.byNS[id]))
		x.byNS[id] = append(x.byNS[id], c.e)
	}
	x.version = version
	x.loaded = true
}

// leaveNS takes list[i] out of its namespace's entries: the last of them
// takes its place. x.mu held.
func (x *Index) leaveNS(i int) {
	ns, j := x.list[i].ns, x.nsAt[i]
	es := x.byNS[ns]
	last := len(es) - 1
	moved := es[last]
	es[j] = moved
	x.nsAt[x.pos[moved.seq]] = j
	es[last] = nil
	x.byNS[ns] = es[:last]
}

// Counts are the vectors of live records, by state.
type Counts struct {
	// Current vectors match their record's text under the key; Stale ones
	// were made from other text, model or snapshot; Missing records have
	// none.
	Current, Stale, Missing int
}

// Counts counts live records by the state of their vector. ok is false
// when the index cannot tell (see Loaded): before it first loaded, and
// while it reloads for a new key; the counts are then zero.
func (x *Index) Counts() (c Counts, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if !x.ready() {
		return Counts{}, false
	}
	for _, e := range x.list {
		switch {
		case !e.live:
		case e.current:
			c.Current++
		case e.digest != "":
			c.Stale++
		default:
			c.Missing++
		}
	}
	return c, true
}

// Todo returns up to n ids of live records whose vector is missing or
// stale, oldest first.
func (x *Index) Todo(n int) []string {
	x.mu.RLock()
	var es []*entry
	for _, e := range x.list {
		if e.live && !e.current {
			es = append(es, e)
		}
	}
	x.mu.RUnlock()
	slices.SortFunc(es, func(a, b *entry) int { return int(a.seq - b.seq) })
	out := make([]string, 0, min(n, len(es)))
	for _, e := range es[:min(n, len(es))] {
		out = append(out, e.id)
	}
	return out
}

// errNotCurrent: a record the search could return has no current vector.
var errNotCurrent = errors.New("a record in scope has no current vector")

// errNotLoaded: the index is loading or reloading for a new key.
var errNotLoaded = errors.New("the vector index is loading")

// collect returns the entries a search for q could return (live, in scope,
// of the types asked, not excluded) and the key they are current for. It
// fails with errNotCurrent when one of them has no current vector.
func (x *Index) collect(q Query) ([]*entry, string, string, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if !x.ready() {
		return nil, "", "", errNotLoaded
	}
	allowed := make([]bool, len(x.nsNames))
	for _, ns := range q.Chain {
		if id, ok := x.nsID[ns]; ok {
			allowed[id] = true
		}
	}
	if q.AllRepositories || len(q.Chain) == 0 {
		for id, ns := range x.nsNames {
			if len(q.Chain) == 0 || repository(ns) {
				allowed[id] = true
			}
		}
	}
	var exclude []string
	for _, p := range q.Exclude {
		if len(p) >= storage.MinExcludePrefix {
			exclude = append(exclude, strings.ToUpper(p))
		}
	}
	// The namespaces' own entries, or all of them when those are most.
	n := 0
	var from [][]*entry
	for id, ok := range allowed {
		if ok {
			n += len(x.byNS[id])
			from = append(from, x.byNS[id])
		}
	}
	if 2*n > len(x.list) {
		from = [][]*entry{x.list}
	}
	out := make([]*entry, 0, n)
	for _, es := range from {
		for _, e := range es {
			if !e.live || !allowed[e.ns] || (len(q.Types) > 0 && !slices.Contains(q.Types, e.typ)) {
				continue
			}
			if slices.ContainsFunc(exclude, func(p string) bool { return strings.HasPrefix(e.id, p) }) {
				continue
			}
			if !e.current {
				return nil, "", "", errNotCurrent
			}
			out = append(out, e)
		}
	}
	return out, x.model, x.snap, nil
}

// repository reports whether ns is a repository namespace, which a hub's
// search reaches (the same test full-text search applies).
func repository(ns string) bool {
	return strings.HasPrefix(ns, "github/") || strings.HasPrefix(ns, "gitea/") || strings.HasPrefix(ns, "local/")
}

// quantize returns v as int8 codes with its scale (max |v_i| / 127) and
// the norm of what the codes lose.
func quantize(v []float32) ([]int8, float32, float32) {
	var peak float32
	for _, x := range v {
		peak = max(peak, float32(math.Abs(float64(x))))
	}
	codes := make([]int8, len(v))
	if peak == 0 {
		return codes, 0, 0
	}
	scale := peak / 127
	var lost float64
	for i, x := range v {
		c := math.Round(float64(x / scale))
		codes[i] = int8(max(-127, min(127, c)))
		d := float64(x) - float64(scale)*float64(codes[i])
		lost += d * d
	}
	return codes, scale, float32(math.Sqrt(lost))
}

// dot is the float64 dot product of two vectors of equal length.
func dot(a, b []float32) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float64(a[i]) * float64(b[i])
		s1 += float64(a[i+1]) * float64(b[i+1])
		s2 += float64(a[i+2]) * float64(b[i+2])
		s3 += float64(a[i+3]) * float64(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += float64(a[i]) * float64(b[i])
	}
	return s0 + s1 + s2 + s3
}

// bound is an entry with the upper end of its approximate cosine's error
// interval.
type bound struct {
	e  *entry
	hi float32
}

// parallelScan is the candidate count above which a scan splits its work
// over the processors.
const parallelScan = 4096

// nearest returns the entries that may be among the k most similar to the
// unit query q: those whose upper bound reaches the k-th highest lower
// bound, in the order of es. Every entry of the true top k is among them.
// When more than maxRescore qualify, it returns the maxRescore with the
// highest upper bounds (ties by id), in that order.
//
// Each entry's cosine comes from its int8 codes with a bound on the error:
// for v ≈ vs·vc, losing vr, |q·v − vs·(q·vc)| = |q·(v − vs·vc)| ≤ |q|·vr =
// vr (Cauchy–Schwarz). The entries are scanned in parts, over the
// processors when there are many, and each part keeps only what can still
// reach its own k-th highest lower bound, which never exceeds the whole
// scan's: a scan holds the bounds that may still reach the top, not one
// per entry.
func nearest(q []float32, es []*entry, k int) []*entry {
	if k <= 0 || len(es) == 0 {
		return nil
	}
	parts := 1
	if procs := runtime.GOMAXPROCS(0); len(es) >= parallelScan && procs > 1 {
		parts = procs
	}
	scans := make([]partScan, parts)
	step := (len(es) + parts - 1) / parts
	var wg sync.WaitGroup
	for i := range scans {
		lo, hi := min(i*step, len(es)), min((i+1)*step, len(es))
		if i == parts-1 {
			scans[i].run(q, es[lo:hi], k) // on this goroutine
			continue
		}
		wg.Go(func() { scans[i].run(q, es[lo:hi], k) })
	}
	wg.Wait()

	var floors topLows
	for _, s := range scans {
		for _, lo := range s.top {
			floors.push(lo, k)
		}
	}
	floor := floors.floor(k)
	var keep []bound
	for _, s := range scans {
		for _, b := range s.keep {
			if b.hi >= floor {
				keep = append(keep, b)
			}
		}
	}
	if len(keep) > maxRescore {
		slices.SortFunc(keep, func(a, b bound) int {
			return cmp.Or(cmp.Compare(b.hi, a.hi), strings.Compare(a.e.id, b.e.id))
		})
		keep = keep[:maxRescore]
	}
	out := make([]*entry, len(keep))
	for i, b := range keep {
		out[i] = b.e
	}
	return out
}

// partScan is one part of a scan: the k highest lower bounds it met, and
// the bounds that reach the k-th of them.
type partScan struct {
	top  topLows
	keep []bound
}

// run scans es for q, keeping at most k lower bounds and the bounds whose
// upper end reaches the lowest of those (once it holds k).
func (s *partScan) run(q []float32, es []*entry, k int) {
	for _, e := range es {
		if len(e.codes) != len(q) {
			continue
		}
		a := e.scale * dotCodes(q, e.codes)
		eps := e.resid + 1e-5 // and float rounding
		lo, hi := a-eps, a+eps
		s.top.push(lo, k)
		floor := s.top.floor(k)
		if hi < floor {
			continue
		}
		s.keep = append(s.keep, bound{e: e, hi: hi})
		// The floor only rises: now and then, drop what fell below it.
		if len(s.keep) >= 4*k+256 {
			s.keep = slices.DeleteFunc(s.keep, func(b bound) bool { return b.hi < floor })
		}
	}
}

// topLows holds the highest lower bounds met, at most k, in a min-heap.
type topLows []float32

// push offers lo to the k highest.
func (t *topLows) push(lo float32, k int) {
	h := *t
	switch {
	case len(h) < k:
		h = append(h, lo)
		for i := len(h) - 1; i > 0 && h[(i-1)/2] > h[i]; i = (i - 1) / 2 {
			h[i], h[(i-1)/2] = h[(i-1)/2], h[i]
		}
	case lo > h[0]:
		h[0] = lo
		for i := 0; ; {
			l, r, m := 2*i+1, 2*i+2, i
			if l < k && h[l] < h[m] {
				m = l
			}
			if r < k && h[r] < h[m] {
				m = r
			}
			if m == i {
				break
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	*t = h
}

// floor is the k-th highest lower bound, or -Inf while fewer than k came.
func (t topLows) floor(k int) float32 {
	if len(t) < k {
		return float32(math.Inf(-1))
	}
	return t[0]
}

// dotCodes is the dot product of a float vector and a code vector of equal
// length.
func dotCodes(q []float32, c []int8) float32 {
	c = c[:len(q)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(q); i += 4 {
		s0 += q[i] * float32(c[i])
		s1 += q[i+1] * float32(c[i+1])
		s2 += q[i+2] * float32(c[i+2])
		s3 += q[i+3] * float32(c[i+3])
	}
	for ; i < len(q); i++ {
		s0 += q[i] * float32(c[i])
	}
	return s0 + s1 + s2 + s3
}

// maxRescore caps how many vectors a scan reads back as float32 for exact
// cosines. The candidates are only more than a few dozen when many records
// are about equally similar to the query (copies of one text); then the
// ones with the highest bounds are read.
const maxRescore = 2000
