package retrieval

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/oklog/ulid/v2"

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
//
// Memory (docs/operations.md, "Vector memory"): the entries and their
// codes lie in a few large chunks (slab) rather than an allocation each,
// the list is kept in seq order so that a binary search finds a record
// (no map), and an entry holds its id in the same string as its codes,
// a ULID as its 16 bytes rather than its 26 characters.
type Index struct {
	db *storage.DB
	// dims, when above 0, is how many leading coordinates of each vector
	// the index codes (see NewPrefixIndex).
	dims int

	syncMu    sync.Mutex // one Sync or SetKey at a time
	reloading atomic.Bool
	// slab is where the entries Sync reads are made; only a holder of
	// syncMu uses it.
	slab *slab

	mu      sync.RWMutex // guards what follows
	loaded  bool
	version int64
	model   string
	snap    string
	// list holds the entries by seq, ascending (see find).
	list []*entry
	// byNS holds where each namespace's entries are in list, by its id
	// (nsID), so that a search of a few namespaces collects its candidates
	// from them alone; nsAt[i] is where list[i] is in its namespace's. A
	// search that reaches most records reads list, in the order the
	// entries were loaded (and so lie in memory): by namespace, the scan
	// of 100,000 vectors took two fifths more time.
	byNS    [][]int32
	nsAt    []int32
	nsID    map[string]int32
	nsNames []string
}

// entry is one record as the index knows it, 32 bytes besides its data.
// Entries are never changed once in the index: a change replaces the
// entry, so a scan may read the entries it collected without the lock.
type entry struct {
	seq int64
	// data is where the entry's bytes start in the slab's chunk,
	// immutable: the vector's codes, codeLen(dim) bytes at codeBits bits
	// a coordinate (see quantize), then the record's id, a ULID's 16
	// bytes when isPacked (see packID), else its length (a uvarint) and
	// the id. A pointer rather than a string: the lengths follow from dim
	// and flags, and the entry is 8 bytes smaller.
	data *byte
	// digest is a hash of the digest that keys the stored vector (see
	// digestKey), 0 for none.
	digest uint32
	scale  float32
	ns     int32
	dim    uint16 // the coordinates coded (see Index.prefix); 0 for no vector
	typ    uint8  // 1 + its index in storage.Types; 0 for another
	flags  uint8  // isLive, isCurrent, isPacked
}

const (
	// isLive: the record is active or a candidate.
	isLive = 1 << iota
	// isCurrent: the digest is the one the record's text gives under the
	// index's key.
	isCurrent
	// isPacked: data holds the id as a ULID's 16 bytes (see packID).
	isPacked
)

func (e *entry) live() bool    { return e.flags&isLive != 0 }
func (e *entry) current() bool { return e.flags&isCurrent != 0 }

// An entry's dim holds any dimension the store takes.
const _ uint16 = storage.MaxEmbeddingDim

// codes returns the entry's vector codes.
func (e *entry) codes() string { return unsafe.String(e.data, codeLen(int(e.dim))) }

// rawID returns the id as packID gives it: a ULID's 16 bytes when
// isPacked, else the id itself.
func (e *entry) rawID() string {
	at, n := e.idAt()
	return unsafe.String((*byte)(unsafe.Add(unsafe.Pointer(e.data), at)), n)
}

// idAt returns where rawID is in data and its length.
func (e *entry) idAt() (at, n int) {
	at = codeLen(int(e.dim))
	if e.flags&isPacked != 0 {
		return at, len(ulid.ULID{})
	}
	// The uvarint, a byte at a time (never past its end).
	for shift := 0; ; shift += 7 {
		b := *(*byte)(unsafe.Add(unsafe.Pointer(e.data), at))
		at++
		n |= int(b&0x7f) << shift
		if b < 0x80 {
			return at, n
		}
	}
}

// bytes returns all of the entry's data.
func (e *entry) bytes() string {
	at, n := e.idAt()
	return unsafe.String(e.data, at+n)
}

// idTail is what follows the codes in an entry's data for the id raw,
// packed or not (see packID).
func idTail(raw string, packed bool) string {
	if packed {
		return raw
	}
	return string(binary.AppendUvarint(nil, uint64(len(raw)))) + raw
}

// id returns the entry's record id.
func (e *entry) id() string {
	if e.flags&isPacked == 0 {
		return e.rawID()
	}
	return string(e.appendID(make([]byte, 0, ulid.EncodedSize)))
}

// appendID appends the entry's record id to dst.
func (e *entry) appendID(dst []byte) []byte {
	if e.flags&isPacked == 0 {
		return append(dst, e.rawID()...)
	}
	var u ulid.ULID
	copy(u[:], e.rawID())
	var text [ulid.EncodedSize]byte
	_ = u.MarshalTextTo(text[:]) // cannot fail: the buffer is the size
	return append(dst, text[:]...)
}

// compareIDs orders entries by record id as strings.Compare orders the
// ids. A ULID's text is its 16 bytes in base 32, most significant first,
// with digits in ascending order, so two packed ids compare as their
// bytes do.
func compareIDs(a, b *entry) int {
	if a.flags&b.flags&isPacked != 0 {
		return strings.Compare(a.rawID(), b.rawID())
	}
	return strings.Compare(a.id(), b.id())
}

// packID returns id as an entry's data holds it: the 16 bytes of a ULID
// in its canonical text (every id the store makes; docs/operations.md,
// "Vector memory"), else id itself; packed says which.
func packID(id string) (raw string, packed bool) {
	u, err := ulid.ParseStrict(id)
	if err != nil {
		return id, false
	}
	var text [ulid.EncodedSize]byte
	if u.MarshalTextTo(text[:]) != nil || string(text[:]) != id { // lower case, say
		return id, false
	}
	return string(u[:]), true
}

// entrySize is what an entry takes in a slab's chunk besides its data.
const entrySize = int(unsafe.Sizeof(entry{}))

// slab makes entries in chunks: an array of entries, each new one twice
// the last up to maxChunk entries, and a string builder that holds their
// data, of as many entries' data up to maxDataChunk bytes. A chunk stays in memory while one of its entries is in use:
// the entries that changes replaced since stay too, which compact undoes
// once they are more than the live ones (and than a chunk).
type slab struct {
	entries []entry
	data    strings.Builder
	chunk   int
	// made counts the entries made; held the bytes of the chunks
	// allocated.
	made, held int
}

const (
	minChunk = 16
	// maxChunk entries fill whole pages of memory (an array this large has
	// no header), as maxDataChunk does.
	maxChunk     = 1024
	maxDataChunk = 128 << 10
)

// put returns a copy of e in the slab, its data codes then tail (see
// entry.data).
func (s *slab) put(e entry, codes []byte, tail string) *entry {
	if len(s.entries) == cap(s.entries) {
		s.chunk = min(maxChunk, max(minChunk, 2*s.chunk))
		s.entries = make([]entry, 0, s.chunk)
		s.held += s.chunk * entrySize
	}
	if n := len(codes) + len(tail); s.data.Cap()-s.data.Len() < n {
		s.data = strings.Builder{}
		s.data.Grow(max(n, min(s.chunk*n, maxDataChunk)))
		s.held += s.data.Cap()
	}
	at := s.data.Len()
	s.data.Write(codes)
	s.data.WriteString(tail)
	e.data = unsafe.StringData(s.data.String()[at:])
	s.entries = append(s.entries, e)
	s.made++
	return &s.entries[len(s.entries)-1]
}

// unused is the bytes of the last chunks that no entry has yet.
func (s *slab) unused() int {
	return (cap(s.entries)-len(s.entries))*entrySize + s.data.Cap() - s.data.Len()
}

// typeCode is what an entry keeps of a record type: 1 + its index in
// storage.Types, 0 for a type not there (which no search's types match).
func typeCode(t string) uint8 {
	return uint8(slices.Index(storage.Types, t) + 1)
}

// digestKey is the FNV-1a hash of a vector's digest, what an entry keeps
// of it (4 bytes rather than 64 hex digits; 0 for none): the index
// compares it with the stored digest's when it reads a vector back, to
// tell one re-embedded since it synced (a vector whose hash matched by
// chance, one in four billion, would be the record's newer one).
func digestKey(d string) uint32 {
	if d == "" {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(d))
	return max(1, h.Sum32())
}

// NewIndex returns an empty index over db; Sync loads it.
func NewIndex(db *storage.DB) *Index { return NewPrefixIndex(db, 0) }

// NewPrefixIndex returns an empty index over db that codes only the first
// dims coordinates of each longer vector (0: all of them), for an encoder
// trained so that a vector's leading coordinates are a vector of their own
// (Matryoshka representation learning; docs/operations.md, "Vector
// memory"). The scan ranks by the cosine of those leading coordinates;
// the shortlist is rescored with whole vectors as always.
func NewPrefixIndex(db *storage.DB, dims int) *Index {
	return &Index{db: db, dims: max(0, dims), slab: &slab{}, nsID: map[string]int32{}}
}

// Dims returns how many leading coordinates of a vector the index codes,
// 0 for all of them.
func (x *Index) Dims() int { return x.dims }

// prefix returns the coordinates of v the index codes.
func (x *Index) prefix(v []float32) []float32 {
	if x.dims > 0 && len(v) > x.dims {
		return v[:x.dims]
	}
	return v
}

// code appends the codes of v to dst as the index keeps them and returns
// them, the scale and the coordinates coded, those of prefix(v). A scan
// thus ranks by the dot product of the leading coordinates: the part of
// the whole vectors' cosine they hold, which the rescoring completes (not
// by the cosine of the leading coordinates as a vector of their own, which
// leaves their length out).
func (x *Index) code(dst []byte, v []float32) ([]byte, float32, int) {
	p := x.prefix(v)
	codes, scale := quantize(dst, p)
	return codes, scale, len(p)
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
	fresh := &slab{}
	entries, version, err := x.read(ctx, fresh, 0, model, snapshot)
	if err != nil {
		return err
	}
	x.mu.Lock()
	x.model, x.snap, x.slab = model, snapshot, fresh
	x.list, x.nsAt, x.version = nil, nil, 0
	for i := range x.byNS {
		x.byNS[i] = nil
	}
	x.apply(entries, version)
	x.mu.Unlock()
	// The load read every vector and record text, several times the
	// index's size, and the heap grew to twice what it kept: the memory
	// goes back to the system now rather than stay resident (at 100,000
	// 1,024-d vectors, 150 MiB after the load against 83; the collection
	// takes tens of milliseconds, once a load; docs/operations.md, "Vector
	// memory").
	if fresh.held >= freeAfterLoad {
		debug.FreeOSMemory()
	}
	return nil
}

// freeAfterLoad is the size of a load (its slab's bytes) from which
// SetKey returns the load's garbage to the system.
const freeAfterLoad = 4 << 20

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
	entries, version, err := x.read(ctx, x.slab, since, model, snap)
	if err != nil {
		return err
	}
	x.mu.Lock()
	x.apply(entries, version)
	x.mu.Unlock()
	if x.slab.made-len(x.list) > max(len(x.list), maxChunk) {
		x.compact()
	}
	return nil
}

// compact copies the entries into a new slab, leaving the old one with
// the entries changes replaced to the garbage collector (a scan that
// collected some keeps them until it ends). The caller holds syncMu, so
// the list changes under no one else.
func (x *Index) compact() {
	fresh := &slab{}
	moved := make([]*entry, len(x.list))
	for i, e := range x.list {
		moved[i] = fresh.put(*e, nil, e.bytes())
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	copy(x.list, moved)
	x.slab = fresh
}

// heldBytes is the memory the index holds by its own count: the chunks
// its slab allocated (entries replaced since the last load or compact
// included), its list and positions and the namespaces' lists. It waits
// for a sync under way (which makes entries in the slab).
func (x *Index) heldBytes() int {
	x.syncMu.Lock()
	defer x.syncMu.Unlock()
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := x.slab.held + 8*cap(x.list) + 4*cap(x.nsAt)
	for _, es := range x.byNS {
		n += 4 * cap(es)
	}
	return n
}

// change is an entry read from the feed, or a purged record (gone).
type change struct {
	e    *entry
	ns   string
	gone bool
}

// read reads the feed above since and makes the entries it brings in s,
// with currency under model and snapshot. It runs outside x.mu.
func (x *Index) read(ctx context.Context, s *slab, since int64, model, snapshot string) ([]change, int64, error) {
	var out []change
	var codes []byte
	version, err := x.db.VectorChanges(ctx, since, true, func(c storage.VectorChange) error {
		if c.Gone {
			out = append(out, change{e: &entry{seq: c.Seq}, gone: true})
			return nil
		}
		e := entry{seq: c.Seq, typ: typeCode(c.Type)}
		if c.Status == storage.StatusActive || c.Status == storage.StatusCandidate {
			e.flags |= isLive
		}
		codes = codes[:0]
		id, packed := packID(c.ID)
		if packed {
			e.flags |= isPacked
		}
		if c.Digest != "" && len(c.Vector) > 0 {
			e.digest = digestKey(c.Digest)
			var dim int
			codes, e.scale, dim = x.code(codes, c.Vector)
			e.dim = uint16(dim)
			if model != "" && c.Model == model && c.Snapshot == snapshot &&
				c.Digest == encoder.Digest(model, snapshot, encoder.RecordText(c.Title, c.Content)) {
				e.flags |= isCurrent
			}
		}
		out = append(out, change{e: s.put(e, codes, idTail(id, packed)), ns: c.Namespace})
		return nil
	})
	return out, version, err
}

// find returns where the entry of seq is in list, or where it would go.
func (x *Index) find(seq int64) (int, bool) {
	return slices.BinarySearchFunc(x.list, seq, func(e *entry, seq int64) int { return cmp.Compare(e.seq, seq) })
}

// apply puts changes into the index and moves it to version. x.mu held.
// A change to a record the list holds replaces its entry where it is (a
// purge leaves a placeholder, nsAt −1, until the end); the records new to
// the list join it at the end: appended when they come after all it
// holds, else the list is made anew (so also at a load and after a purge).
func (x *Index) apply(changes []change, version int64) {
	var later []change
	purged := 0
	for _, c := range changes {
		i, ok := x.find(c.e.seq)
		switch {
		case !ok:
			later = append(later, c)
		case c.gone:
			if x.nsAt[i] >= 0 {
				x.leaveNS(i)
				x.list[i], x.nsAt[i] = c.e, -1
				purged++
			}
		default:
			c.e.ns = x.namespace(c.ns)
			switch {
			case x.nsAt[i] < 0: // purged above, and back
				purged--
			case x.list[i].ns == c.e.ns:
				x.list[i] = c.e
				continue
			default: // moved to another namespace (a rename)
				x.leaveNS(i)
			}
			x.list[i] = c.e
			x.joinNS(i)
		}
	}
	x.version = version
	x.loaded = true
	// Of the records new to the list, the last change of each, by seq.
	slices.SortStableFunc(later, func(a, b change) int { return cmp.Compare(a.e.seq, b.e.seq) })
	var add []*entry
	for j, c := range later {
		if c.gone || j+1 < len(later) && later[j+1].e.seq == c.e.seq {
			continue
		}
		c.e.ns = x.namespace(c.ns)
		add = append(add, c.e)
	}
	if purged == 0 && len(x.list) > 0 && (len(add) == 0 || add[0].seq > x.list[len(x.list)-1].seq) {
		for _, e := range add {
			x.list = append(x.list, e)
			x.nsAt = append(x.nsAt, 0)
			x.joinNS(len(x.list) - 1)
		}
		return
	}
	x.remake(add)
}

// remake makes the list anew from its entries that were not purged and
// add, by seq, in arrays of the size they need. x.mu held.
func (x *Index) remake(add []*entry) {
	list := make([]*entry, 0, len(x.list)+len(add))
	for i, e := range x.list {
		if x.nsAt[i] < 0 {
			continue
		}
		for len(add) > 0 && add[0].seq < e.seq {
			list = append(list, add[0])
			add = add[1:]
		}
		list = append(list, e)
	}
	list = append(list, add...)
	counts := make([]int, len(x.byNS))
	for _, e := range list {
		counts[e.ns]++
	}
	for id, n := range counts {
		x.byNS[id] = nil
		if n > 0 {
			x.byNS[id] = make([]int32, 0, n)
		}
	}
	x.list, x.nsAt = list, make([]int32, len(list))
	for i := range list {
		x.joinNS(i)
	}
}

// namespace returns the id of namespace ns, making one for a new name.
// x.mu held.
func (x *Index) namespace(ns string) int32 {
	id, ok := x.nsID[ns]
	if !ok {
		id = int32(len(x.nsNames))
		x.nsNames = append(x.nsNames, ns)
		x.nsID[ns] = id
		x.byNS = append(x.byNS, nil)
	}
	return id
}

// joinNS adds list[i] to its namespace's entries. x.mu held.
func (x *Index) joinNS(i int) {
	ns := x.list[i].ns
	x.nsAt[i] = int32(len(x.byNS[ns]))
	x.byNS[ns] = append(x.byNS[ns], int32(i))
}

// leaveNS takes list[i] out of its namespace's entries: the last of them
// takes its place. x.mu held.
func (x *Index) leaveNS(i int) {
	ns, j := x.list[i].ns, x.nsAt[i]
	at := x.byNS[ns]
	last := len(at) - 1
	moved := at[last]
	at[j] = moved
	x.nsAt[moved] = j
	x.byNS[ns] = at[:last]
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
		case !e.live():
		case e.current():
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
	defer x.mu.RUnlock()
	var out []string
	for _, e := range x.list { // by seq
		if len(out) == n {
			break
		}
		if e.live() && !e.current() {
			out = append(out, e.id())
		}
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
	var exclude [][]byte
	for _, p := range q.Exclude {
		if len(p) >= storage.MinExcludePrefix {
			exclude = append(exclude, []byte(strings.ToUpper(p)))
		}
	}
	keep := func(e *entry) bool {
		if !e.live() || !allowed[e.ns] || (len(q.Types) > 0 && (e.typ == 0 || !slices.Contains(types, e.typ))) {
			return false
		}
		if len(exclude) == 0 {
			return true
		}
		var buf [ulid.EncodedSize]byte
		id := e.appendID(buf[:0])
		return !slices.ContainsFunc(exclude, func(p []byte) bool { return bytes.HasPrefix(id, p) })
	}
	// The namespaces' own entries, or all of them when those are most.
	n := 0
	for id, ok := range allowed {
		if ok {
			n += len(x.byNS[id])
		}
	}
	out := make([]*entry, 0, n)
	if 2*n > len(x.list) {
		for _, e := range x.list {
			if keep(e) {
				out = append(out, e)
			}
		}
	} else {
		for id, ok := range allowed {
			if !ok {
				continue
			}
			for _, i := range x.byNS[id] {
				if e := x.list[i]; keep(e) {
					out = append(out, e)
				}
			}
		}
	}
	if slices.ContainsFunc(out, func(e *entry) bool { return !e.current() }) {
		return nil, "", "", errNotCurrent
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

// codeLen is how many bytes the codes of a vector of dim coordinates take.
func codeLen(dim int) int { return (dim + codesInByte - 1) / codesInByte }

// quantize appends v as codeBits-bit codes to dst, codesInByte to a byte
// (the first coordinate in the low bits), and returns them and the scale:
// coordinate i is about scale·levels[code i]. The codes cut the
// coordinates into steps of 2·scale, codeStep times their root mean
// square, clamped at the ends.
func quantize(dst []byte, v []float32) ([]byte, float32) {
	at := len(dst)
	dst = append(dst, make([]byte, codeLen(len(v)))...)
	codes := dst[at:]
	var sq float64
	for _, x := range v {
		sq += float64(x) * float64(x)
	}
	if sq == 0 {
		return dst, 0
	}
	scale := float32(codeStep * math.Sqrt(sq/float64(len(v))) / 2)
	for i, x := range v {
		c := int(math.Floor(float64(x/(2*scale)))) + codeLevels/2
		c = max(0, min(codeMask, c))
		codes[i/codesInByte] |= byte(c) << (i % codesInByte * codeBits)
	}
	return dst, scale
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
	return cmp.Or(cmp.Compare(b.a, a.a), compareIDs(a.e, b.e))
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
		a := e.scale * dotCodes(q, e.codes())
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
