package retrieval

import (
	"cmp"
	"context"
	"errors"
	"hash/fnv"
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
// is current, and the vector itself quantized to codeBits bits a
// coordinate with one scale per vector (an eighth of float32's memory).
// The float32 vectors stay in the store; a scan reads back the few dozen
// it shortlists to give exact cosines (see nearest).
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
	seq int64
	// digest is a hash of the digest that keys the stored vector (see
	// digestKey), 0 for none.
	digest uint64
	id     string
	// codes are the vector's coordinates at codeBits bits each (see
	// quantize; a string, immutable and two words smaller than a slice);
	// dim is its dimension.
	codes string
	ns    int32
	dim   int32
	scale float32
	typ   uint8 // 1 + its index in storage.Types; 0 for another
	live  bool
	// current says the digest is the one the record's text gives under the
	// index's key.
	current bool
}

// typeCode is what an entry keeps of a record type: 1 + its index in
// storage.Types, 0 for a type not there (which no search's types match).
func typeCode(t string) uint8 {
	return uint8(slices.Index(storage.Types, t) + 1)
}

// digestKey is the FNV-1a hash of a vector's digest, what an entry keeps
// of it (8 bytes rather than 64 hex digits; 0 for none): the index
// compares it with the stored digest's when it reads a vector back.
func digestKey(d string) uint64 {
	if d == "" {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(d))
	return max(1, h.Sum64())
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
		e := &entry{seq: c.Seq, id: c.ID, typ: typeCode(c.Type), live: c.Status == storage.StatusActive || c.Status == storage.StatusCandidate}
		if c.Digest != "" && len(c.Vector) > 0 {
			e.digest = digestKey(c.Digest)
			codes, scale := quantize(c.Vector)
			e.codes, e.scale = string(codes), scale
			e.dim = int32(len(c.Vector))
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
		case e.digest != 0:
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
	var types []uint8
	for _, t := range q.Types {
		types = append(types, typeCode(t))
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
			if !e.live || !allowed[e.ns] || (len(q.Types) > 0 && (e.typ == 0 || !slices.Contains(types, e.typ))) {
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

// codeBits is how many bits the index keeps of each coordinate of a
// vector (docs/operations.md, "Vector memory"): 4, two coordinates to a
// byte, an eighth of float32's memory.
const codeBits = 4

const (
	codeLevels  = 1 << codeBits
	codeMask    = codeLevels - 1
	codesInByte = 8 / codeBits
	// codeStep is the quantizer's step in units of the vector's root mean
	// square coordinate: near the least squared error for Gaussian
	// coordinates at 16 levels (what an embedding's look like).
	codeStep = 0.335
)

// levels[c] is the value of code c in units of the vector's scale: the odd
// numbers from −(codeLevels−1) to codeLevels−1.
var levels = func() (l [codeLevels]float32) {
	for c := range l {
		l[c] = float32(2*c + 1 - codeLevels)
	}
	return l
}()

// quantize returns v as codeBits-bit codes, codesInByte to a byte (the
// first coordinate in the low bits), and the scale: coordinate i is about
// scale·levels[code i]. The codes cut the coordinates into steps of
// 2·scale, codeStep times their root mean square, clamped at the ends.
func quantize(v []float32) ([]byte, float32) {
	codes := make([]byte, (len(v)+codesInByte-1)/codesInByte)
	var sq float64
	for _, x := range v {
		sq += float64(x) * float64(x)
	}
	if sq == 0 {
		return codes, 0
	}
	scale := float32(codeStep * math.Sqrt(sq/float64(len(v))) / 2)
	for i, x := range v {
		c := int(math.Floor(float64(x/(2*scale)))) + codeLevels/2
		c = max(0, min(codeMask, c))
		codes[i/codesInByte] |= byte(c) << (i % codesInByte * codeBits)
	}
	return codes, scale
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

// scored is an entry with its approximate cosine.
type scored struct {
	e *entry
	a float32
}

// parallelScan is the candidate count above which a scan splits its work
// over the processors.
const parallelScan = 4096

// shortlist is how many entries a scan for the k most similar keeps for
// exact rescoring: the k by approximate cosine are not always the true k,
// but the true k are among the first few dozen (docs/operations.md,
// "Vector memory", measured on random vectors, the hardest case).
func shortlist(k int) int { return min(maxRescore, max(rescoreMin, rescoreTimes*k)) }

const (
	rescoreMin   = 64
	rescoreTimes = 4
	// maxRescore caps how many vectors a scan reads back as float32.
	maxRescore = 2000
)

// nearest returns the shortlist(k) entries with the highest approximate
// cosines to the unit query q (ties by id), in that order; the caller
// rescores them exactly from the stored float32 vectors. An entry's
// approximate cosine is scale·Σ q_i·levels[code_i]. The entries are
// scanned in parts, over the processors when there are many, each part
// keeping its own best; the parts' best are merged.
func nearest(q []float32, es []*entry, k int) []*entry {
	if k <= 0 || len(es) == 0 {
		return nil
	}
	m := shortlist(k)
	parts := 1
	if procs := runtime.GOMAXPROCS(0); len(es) >= parallelScan && procs > 1 {
		parts = procs
	}
	best := make([][]scored, parts)
	step := (len(es) + parts - 1) / parts
	var wg sync.WaitGroup
	for i := range best {
		lo, hi := min(i*step, len(es)), min((i+1)*step, len(es))
		if i == parts-1 {
			best[i] = scanPart(q, es[lo:hi], m) // on this goroutine
			continue
		}
		wg.Go(func() { best[i] = scanPart(q, es[lo:hi], m) })
	}
	wg.Wait()
	all := slices.Concat(best...)
	slices.SortFunc(all, byScore)
	all = all[:min(len(all), m)]
	out := make([]*entry, len(all))
	for i, b := range all {
		out[i] = b.e
	}
	return out
}

// byScore orders by approximate cosine, highest first, then by id.
func byScore(a, b scored) int {
	return cmp.Or(cmp.Compare(b.a, a.a), strings.Compare(a.e.id, b.e.id))
}

// scanPart returns the m entries of es with the highest approximate
// cosines to q (ties by id), in no order. It keeps at most 2m and drops
// down to the best m whenever it holds 2m.
func scanPart(q []float32, es []*entry, m int) []scored {
	keep := make([]scored, 0, 2*m)
	floor := float32(math.Inf(-1))
	for _, e := range es {
		if int(e.dim) != len(q) {
			continue
		}
		a := e.scale * dotCodes(q, e.codes)
		if a < floor {
			continue
		}
		keep = append(keep, scored{e, a})
		if len(keep) == 2*m {
			slices.SortFunc(keep, byScore)
			keep = keep[:m]
			floor = keep[m-1].a
		}
	}
	return keep
}

// dotCodes is Σ q_i·levels[code i] over q's coordinates, codes of the
// same dimension packed two to a byte (codeBits 4).
func dotCodes(q []float32, codes string) float32 {
	var s0, s1 float32
	i := 0
	for j := range len(codes) {
		if i+codesInByte > len(q) {
			break
		}
		b := codes[j]
		s0 += q[i] * levels[b&codeMask]
		s1 += q[i+1] * levels[b>>codeBits]
		i += codesInByte
	}
	if i < len(q) {
		s0 += q[i] * levels[codes[len(codes)-1]&codeMask]
	}
	return s0 + s1
}
