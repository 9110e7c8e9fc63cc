package server

import (
	"context"
	"slices"
	"strings"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/budget"
	"github.com/hearth-memory/hearth/storage"
	"google.golang.org/protobuf/proto"
)

const (
	// bootstrapWindow is how many items of the packet's list are read: more
	// than 2,000 bytes can hold (about 25 at the shortest, 10 to 15 of
	// usual titles), so that items passed over for their size leave room
	// to try later, shorter ones.
	bootstrapWindow = 32
)

func checkBootstrapRequest(r *hearthv1.BootstrapRequest) error {
	return checkSessionID("session_id", r.GetSessionId(), maxBootstrapSessID)
}

// Bootstrap returns the session-start packet of a scope chain (docs/design.md R-B1,
// R-B5, R-B6): candidates awaiting review, the chain's durable records and
// records whose anchors are unavailable, as compact items, in the order
// storage.DB.Bootstrap gives, within 2,000 bytes on the wire for the
// transport that asked (Config.Carrier): the REST body, or the whole
// JSON-RPC reply over MCP. An item that does not fit is passed over (a later,
// shorter one may fit) and counted in left_out with every item not read.
// The first item is always there: when it does not fit as it is, its title
// is shortened. A base (namespace and topics) that leaves no room for it is
// refused. Bootstrap is not counted as use (R-K5).
func (m *memoryService) Bootstrap(ctx context.Context, r *hearthv1.BootstrapRequest) (*hearthv1.BootstrapResponse, error) {
	if err := checkBootstrapRequest(r); err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	home, scopes, err := m.resolve("namespace", r.GetNamespace(), r.GetRemote(), r.GetTopics())
	if err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	list, err := m.db.Bootstrap(ctx, storage.BootstrapQuery{Namespaces: scopes, Limit: bootstrapWindow})
	if err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	items := make([]*hearthv1.BootstrapItem, len(list.Items))
	for i, it := range list.Items {
		items[i] = &hearthv1.BootstrapItem{Id: it.ID, Type: it.Type, Title: it.Title, Reason: it.Reason,
			Unavailable: flagToProto(&it.Unavailable)}
	}
	resp := &hearthv1.BootstrapResponse{Namespace: home, Topics: r.GetTopics()}
	lo, err := m.db.LeftOff(ctx, home, r.GetSessionId())
	if err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	if resp.LeftOff, err = leftOffToProto(m.size, lo); err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	o := budget.Options{
		MaxBytes: budget.Bootstrap * budget.BytesPerToken,
		Carrier:  m.carrier(ctx),
		Skip:     true,
		More:     list.Total - len(items),
	}
	err = packBootstrap(m.size, resp, items, o)
	if err != nil && resp.LeftOff != nil {
		// Where we left off gives way before the base is refused.
		resp.LeftOff = nil
		err = packBootstrap(m.size, resp, items, o)
	}
	if err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	if err := keepUnavailable(m.size, resp, items, o); err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	return resp, nil
}

// keepUnavailable keeps the packet's section of records with unavailable
// anchors (R-B6, R-H2) when packing left it out: the first item listed for
// an unavailable anchor goes in, in its place in the order, and the items
// ranked lowest before it give way, last first, never the first item. When
// not even the first item and it fit together, the packing stays as it was.
func keepUnavailable(sz *budget.Sizer, resp *hearthv1.BootstrapResponse, items []*hearthv1.BootstrapItem, o budget.Options) error {
	unavailable := func(it *hearthv1.BootstrapItem) bool { return it.GetReason() == storage.ReasonAnchorUnavailable }
	packed := resp.GetItems()
	f := slices.IndexFunc(items, unavailable)
	if f <= 0 || len(packed) == 0 || slices.ContainsFunc(packed, unavailable) {
		return nil
	}
	var keep []int // indexes in items of the packed items, in order
	for i, it := range items {
		if slices.Contains(packed, it) {
			keep = append(keep, i)
		}
	}
	for ; len(keep) >= 1; keep = keep[:len(keep)-1] {
		idx := append(slices.Clone(keep), f)
		slices.Sort(idx)
		sub := make([]*hearthv1.BootstrapItem, len(idx))
		for i, j := range idx {
			sub[i] = items[j]
		}
		so := o
		so.Skip = false
		so.More = o.More + len(items) - len(sub)
		p, err := budget.Pack(sz, resp, resp.SetItems, sub, so)
		if err != nil {
			return err
		}
		if len(p.Kept) == len(sub) && p.Fits(so) {
			return nil
		}
		if len(keep) == 1 {
			break
		}
	}
	// No room: the packing as it was.
	so := o
	so.More = o.More + len(items) - len(packed)
	_, err := budget.Pack(sz, resp, resp.SetItems, packed, so)
	return err
}

// packBootstrap packs items into resp within o, the first always: when it
// does not fit as it is, its title is shortened (on a word boundary, with an
// ellipsis) to the longest that fits. When not even the first item with an
// empty title fits, or the response alone when there are no items, it
// returns the refusal of the base.
func packBootstrap(sz *budget.Sizer, resp *hearthv1.BootstrapResponse, items []*hearthv1.BootstrapItem, o budget.Options) error {
	p, err := budget.Pack(sz, resp, resp.SetItems, items, o)
	switch {
	case err != nil:
		return err
	case len(items) == 0 && p.Fits(o), len(p.Kept) > 0 && p.Kept[0] == 0:
		return nil
	case len(items) == 0:
		return baseRefusal(sz, resp, nil, o)
	}
	first, title := items[0], items[0].Title
	alone := o
	alone.More += len(items) - 1
	fits := func(n int) (bool, error) {
		first.Title = budget.Shorten(title, n)
		p, err := budget.Pack(sz, resp, resp.SetItems, items[:1], alone)
		return len(p.Kept) == 1, err
	}
	// The longest title that fits: fits is monotone in n, so search it.
	longest := func() (int, error) {
		lo, hi := -1, len(title) // fits(lo) holds (or lo is -1), fits(hi) does not
		for hi-lo > 1 {
			mid := (lo + hi) / 2
			ok, err := fits(mid)
			if err != nil {
				return 0, err
			}
			if ok {
				lo = mid
			} else {
				hi = mid
			}
		}
		return lo, nil
	}
	lo, err := longest()
	if err != nil {
		return err
	}
	if lo < 0 && first.Unavailable != nil {
		// The anchor flag (an anchor may be 300 characters) gives way
		// before the item does; its reason still says anchor-unavailable.
		first.Unavailable = nil
		if lo, err = longest(); err != nil {
			return err
		}
	}
	if lo < 0 {
		first.Title = ""
		return baseRefusal(sz, resp, first, o)
	}
	first.Title = budget.Shorten(title, lo)
	_, err = budget.Pack(sz, resp, resp.SetItems, items, o)
	return err
}

// baseRefusal is the INVALID_ARGUMENT for a base that leaves no room for
// first (or, with first nil, does not fit at all). It names topics when the
// namespace alone would leave room, and namespace otherwise.
func baseRefusal(sz *budget.Sizer, resp *hearthv1.BootstrapResponse, first *hearthv1.BootstrapItem, o budget.Options) error {
	var items []*hearthv1.BootstrapItem
	if first != nil {
		items = []*hearthv1.BootstrapItem{first}
	}
	if len(resp.GetTopics()) > 0 {
		bare := proto.Clone(resp).(*hearthv1.BootstrapResponse)
		bare.Topics = nil
		p, err := budget.Pack(sz, bare, bare.SetItems, items, o)
		if err != nil {
			return err
		}
		if p.Fits(o) && len(p.Kept) == len(items) {
			return invalid("topics", "leave no room for a single item in the %d-byte session-start packet on this transport; give fewer or shorter topics", o.MaxBytes)
		}
	}
	return invalid("namespace", "leaves no room for a single item in the %d-byte session-start packet on this transport", o.MaxBytes)
}

// Bounds of the packet's "where we left off" (docs/capture.md): at most
// this many files and failing commands, each failing line cut to
// maxLeftOffLine characters, and the whole within maxLeftOffBytes of the
// packet's 2,000, files then failing commands giving way from the end.
const (
	maxLeftOffTouched = 8
	maxLeftOffFailing = 3
	maxLeftOffLine    = 120
	maxLeftOffBytes   = 500
)

// leftOffToProto is the packet's left_off for lo (nil for none).
func leftOffToProto(sz *budget.Sizer, lo *storage.LeftOff) (*hearthv1.LeftOff, error) {
	if lo == nil || len(lo.Touched)+len(lo.Failing) == 0 {
		return nil, nil
	}
	p := &hearthv1.LeftOff{SessionId: lo.SessionID, Harness: lo.Harness, LastAt: ts(lo.LastAt)}
	p.Touched = lo.Touched[:min(len(lo.Touched), maxLeftOffTouched)]
	p.MoreTouched = uint32(len(lo.Touched) - len(p.Touched))
	for _, f := range lo.Failing[:min(len(lo.Failing), maxLeftOffFailing)] {
		line := "`" + f.Command + "`"
		switch {
		case len(f.Tests) > 0:
			line += ": " + strings.Join(f.Tests, ", ")
		case len(f.Errors) > 0:
			line += ": " + f.Errors[0]
		}
		p.Failing = append(p.Failing, budget.Shorten(line, maxLeftOffLine))
	}
	for {
		n, err := sz.Size(p)
		if err != nil || n <= maxLeftOffBytes {
			return p, err
		}
		switch {
		case len(p.Touched) > 1:
			p.Touched = p.Touched[:len(p.Touched)-1]
			p.MoreTouched++
		case len(p.Failing) > 1:
			p.Failing = p.Failing[:len(p.Failing)-1]
		default:
			return nil, nil
		}
	}
}
