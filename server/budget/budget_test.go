package budget_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hearth-memory/hearth/gateway"
	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/budget"
	"github.com/mark3labs/mcp-go/mcp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// mcpReply is the JSON-RPC reply mcp-go writes for a tool result whose text
// is text, exactly: encoding/json with HTML escaping and a final newline.
func mcpReply(tb testing.TB, id any, text string) []byte {
	tb.Helper()
	var b bytes.Buffer
	res := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(text)}}
	if err := json.NewEncoder(&b).Encode(mcp.NewJSONRPCResultResponse(mcp.NewRequestId(id), res)); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// carrierOf is the Carrier the bridge would send a reply to id with (nil: REST).
func carrierOf(tb testing.TB, id any) budget.Carrier {
	if id == nil {
		return nil
	}
	return gateway.Wire{MCP: true, Overhead: len(mcpReply(tb, id, ""))}
}

// sizer measures as the transports marshal.
func sizer(tb testing.TB) *budget.Sizer {
	tb.Helper()
	s, err := budget.NewSizer(gateway.MarshalResult)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// packer packs items into a response of one kind through its setter.
type packer func(s *budget.Sizer, resp proto.Message, items []proto.Message, o budget.Options) (budget.Packed, error)

// packWith returns the packer of responses R whose list holds T, set by set.
func packWith[R budget.Response, T proto.Message](set func(R, []T)) packer {
	return func(s *budget.Sizer, resp proto.Message, items []proto.Message, o budget.Options) (budget.Packed, error) {
		r := resp.(R)
		typed := make([]T, len(items))
		for i, it := range items {
			typed[i] = it.(T)
		}
		return budget.Pack(s, r, func(ts []T) { set(r, ts) }, typed, o)
	}
}

// received is what the caller receives for a response: the REST body, or
// the reply to id over MCP.
func received(tb testing.TB, id any, m proto.Message) []byte {
	tb.Helper()
	b, err := gateway.MarshalResult(m)
	if err != nil {
		tb.Fatal(err)
	}
	if id == nil {
		return b
	}
	return mcpReply(tb, id, string(b))
}

// nasty draws text that stresses every escape: quotes, backslashes, HTML
// characters, control characters, line separators, multi-byte runes.
func nasty(r *rand.Rand, n int) string {
	pieces := []string{"word", "the", "cache", " ", " ", "\"", "\\", "<", ">", "&", "\n", "\t", "\x01", "\x1f",
		"\u2028", "\u2029", "é", "日本", "🙂", "\u007f", "a_b", "--", "…"}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	s := b.String()
	for len(s) > n {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

func id26(r *rand.Rand) string {
	const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	b := make([]byte, 26)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

func record(r *rand.Rand) *hearthv1.Record {
	at := timestamppb.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.IntN(1e9)) * time.Millisecond))
	rec := &hearthv1.Record{
		Id: id26(r), Namespace: "github/acme/api", Type: "decision", Title: nasty(r, 1+r.IntN(200)),
		Content: nasty(r, 1+r.IntN([]int{50, 400, 3000}[r.IntN(3)])), Status: "active", Revision: uint32(r.IntN(9) + 1),
		Writer: "claude-code", Confidence: 0.8, EffectiveConfidence: r.Float64(), Source: "store",
		CreatedAt: at, UpdatedAt: at,
	}
	for range r.IntN(3) {
		rec.Anchors = append(rec.Anchors, &hearthv1.Anchor{Anchor: "path:" + nasty(r, 10), State: "unknown"})
	}
	return rec
}

// kind is one response type Pack fills, with an item generator.
type kind struct {
	name string
	resp func(r *rand.Rand) proto.Message
	list protoreflect.Name
	item func(r *rand.Rand) proto.Message
	pack packer
}

var kinds = []kind{
	{"bootstrap", func(r *rand.Rand) proto.Message {
		return &hearthv1.BootstrapResponse{Namespace: "github/acme/" + strings.Repeat("x", r.IntN(140)), Topics: []string{"go", "db"}[:r.IntN(3)]}
	}, "items", func(r *rand.Rand) proto.Message {
		return &hearthv1.BootstrapItem{Id: id26(r), Type: "constraint", Title: nasty(r, 1+r.IntN(200)), Reason: "durable"}
	}, packWith((*hearthv1.BootstrapResponse).SetItems)},
	{"search", func(*rand.Rand) proto.Message { return &hearthv1.SearchResponse{Ranking: "fts"} }, "hits",
		func(r *rand.Rand) proto.Message {
			return &hearthv1.SearchHit{Id: id26(r), Namespace: "global", Type: "note", Title: nasty(r, 1+r.IntN(200)),
				Snippet: budget.Snippet(nasty(r, r.IntN(400))), Status: "active", Score: r.Float64(), Why: "fts #1"}
		}, packWith((*hearthv1.SearchResponse).SetHits)},
	{"get", func(*rand.Rand) proto.Message {
		return &hearthv1.GetResponse{Missing: []string{"01JD3M5ZK9Q8W7E6R5T4Y3X2V1"}}
	}, "records",
		func(r *rand.Rand) proto.Message { return record(r) }, packWith((*hearthv1.GetResponse).SetRecords)},
	{"context", func(r *rand.Rand) proto.Message {
		return &hearthv1.ContextResponse{BudgetTokens: uint32(r.IntN(8000)), Clamped: r.IntN(2) == 0}
	}, "records", func(r *rand.Rand) proto.Message { return record(r) }, packWith((*hearthv1.ContextResponse).SetRecords)},
	{"timeline", func(*rand.Rand) proto.Message { return &hearthv1.TimelineResponse{} }, "records",
		func(r *rand.Rand) proto.Message { return record(r) }, packWith((*hearthv1.TimelineResponse).SetRecords)},
}

// listOf returns the items in resp's list field.
func listOf(resp proto.Message, list protoreflect.Name) []proto.Message {
	r := resp.ProtoReflect()
	l := r.Get(r.Descriptor().Fields().ByName(list)).List()
	out := make([]proto.Message, l.Len())
	for i := range out {
		out[i] = l.Get(i).Message().Interface()
	}
	return out
}

// withItems returns a copy of resp whose list holds items.
func withItems(resp proto.Message, list protoreflect.Name, items []proto.Message) proto.Message {
	c := proto.Clone(resp)
	r := c.ProtoReflect()
	l := r.Mutable(r.Descriptor().Fields().ByName(list)).List()
	l.Truncate(0)
	for _, it := range items {
		l.Append(protoreflect.ValueOfMessage(proto.Clone(it).ProtoReflect()))
	}
	return c
}

func uintField(m proto.Message, name protoreflect.Name) uint64 {
	r := m.ProtoReflect()
	return r.Get(r.Descriptor().Fields().ByName(name)).Uint()
}

func boolField(m proto.Message, name protoreflect.Name) bool {
	r := m.ProtoReflect()
	return r.Get(r.Descriptor().Fields().ByName(name)).Bool()
}

// slack is how far under the budget Pack may stop: it reserves room for
// its reporting fields at their widest (left_out, estimated_tokens digits
// and "false" over "true").
const slack = 24

// TestPack_Property packs random responses of every budgeted kind, with
// items of mixed sizes and hostile text, over REST and over MCP with
// random request ids, and checks every promise against the bytes a caller
// really receives (the MCP reply as mcp-go writes it).
func TestPack_Property(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	sz := sizer(t)
	ids := []any{nil, nil, 1, int64(987654321), "req-<&>\"\\\u2028", 1.5, strings.Repeat("long-id-", 20)}
	for iter := range 600 {
		k := kinds[r.IntN(len(kinds))]
		resp := k.resp(r)
		items := make([]proto.Message, r.IntN(40))
		for i := range items {
			items[i] = k.item(r)
		}
		id := ids[r.IntN(len(ids))]
		o := budget.Options{
			MaxBytes:  []int{200, 2000, 3000, 8000, 16000}[r.IntN(5)] + r.IntN(500),
			Carrier:   carrierOf(t, id),
			KeepFirst: r.IntN(2) == 0,
			Skip:      r.IntN(2) == 0,
			More:      []int{0, 0, 3, 100000}[r.IntN(4)],
		}
		name := fmt.Sprintf("%d/%s/id=%v/%+v", iter, k.name, id, o)
		p, err := k.pack(sz, resp, items, o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		body := received(t, id, resp)
		json, _ := gateway.MarshalResult(resp)
		if p.Sent != len(body) || p.JSON != len(json) {
			t.Fatalf("%s: measured %d sent / %d JSON, received %d / %d", name, p.Sent, p.JSON, len(body), len(json))
		}
		firstOnly := len(p.Kept) == 1 && p.Kept[0] == 0 && o.KeepFirst
		if len(body) > o.MaxBytes && !firstOnly && len(p.Kept) > 0 {
			t.Fatalf("%s: %d bytes received, over the budget with %d items", name, len(body), len(p.Kept))
		}
		if got, want := uintField(resp, "estimated_tokens"), uint64(budget.Tokens(len(json))); got != want {
			t.Errorf("%s: estimated_tokens %d, want %d", name, got, want)
		}
		leftOut := len(items) + o.More - len(p.Kept)
		if p.LeftOut != leftOut || uintField(resp, "left_out") != uint64(leftOut) || boolField(resp, "truncated") != (leftOut > 0) {
			t.Errorf("%s: left_out %d / %d, truncated %v; want %d", name, p.LeftOut, uintField(resp, "left_out"),
				boolField(resp, "truncated"), leftOut)
		}
		var want []proto.Message
		for i, k := range p.Kept {
			if i > 0 && k <= p.Kept[i-1] {
				t.Fatalf("%s: kept %v out of order", name, p.Kept)
			}
			if !o.Skip && k != i {
				t.Fatalf("%s: kept %v, want a prefix without Skip", name, p.Kept)
			}
			want = append(want, items[k])
		}
		if got := listOf(resp, k.list); !slices.EqualFunc(got, want, proto.Equal) {
			t.Fatalf("%s: the list does not hold the kept items", name)
		}
		// Nothing left out would have fitted: with it the response is over
		// the budget (less the room Pack reserves for its own fields).
		if len(body) > o.MaxBytes {
			continue
		}
		for i := range items {
			if slices.Contains(p.Kept, i) || (!o.Skip && i > len(p.Kept)) {
				continue
			}
			var more []proto.Message
			for j := range items {
				if j == i || slices.Contains(p.Kept, j) {
					more = append(more, items[j])
				}
			}
			if n := len(received(t, id, withItems(resp, k.list, more))); n <= o.MaxBytes-slack {
				t.Errorf("%s: item %d was left out, but the response with it is %d bytes", name, i, n)
			}
		}
	}
}

// packWhole is Pack as it was before it settled its reporting fields on the
// response without its items: every measure marshals the whole response,
// as Pack still does over a marshal function that does not split.
// Pack must agree with it, item for item and byte for byte.
func packWhole[R budget.Response, T proto.Message](tb testing.TB, resp R, set func([]T), items []T, o budget.Options) budget.Packed {
	tb.Helper()
	two, err := gateway.MarshalResult(&structpb.ListValue{Values: []*structpb.Value{structpb.NewNullValue(), structpb.NewNullValue()}})
	if err != nil {
		tb.Fatal(err)
	}
	sep := len(two) - len("[nullnull]")
	measure := func() (json, sent int) {
		b, err := gateway.MarshalResult(resp)
		if err != nil {
			tb.Fatal(err)
		}
		if o.Carrier == nil {
			return len(b), len(b)
		}
		return len(b), o.Carrier.Size(b)
	}
	report := func(leftOut int) (json, sent int) {
		tokens := resp.GetEstimatedTokens()
		for {
			resp.SetLeftOut(uint32(leftOut))
			resp.SetTruncated(leftOut > 0)
			resp.SetEstimatedTokens(tokens)
			json, sent := measure()
			if budget.Tokens(json) == tokens {
				return json, sent
			}
			tokens = budget.Tokens(json)
		}
	}
	set(nil)
	offered := len(items) + o.More
	resp.SetLeftOut(uint32(offered))
	resp.SetTruncated(false)
	resp.SetEstimatedTokens(budget.Tokens(o.MaxBytes))
	_, size := measure()
	var (
		p    budget.Packed
		kept []T
	)
	for i, it := range items {
		b, err := gateway.MarshalResult(it)
		if err != nil {
			tb.Fatal(err)
		}
		n := len(b)
		if o.Carrier != nil {
			n = o.Carrier.Fragment(b)
		}
		if len(p.Kept) > 0 {
			n += sep
		}
		if size+n > o.MaxBytes && !(o.KeepFirst && i == 0) {
			if o.Skip {
				continue
			}
			break
		}
		size += n
		p.Kept = append(p.Kept, i)
		kept = append(kept, it)
	}
	set(kept)
	for {
		p.LeftOut = offered - len(p.Kept)
		p.JSON, p.Sent = report(p.LeftOut)
		if p.Sent <= o.MaxBytes || len(p.Kept) == 0 || (o.KeepFirst && len(p.Kept) == 1 && p.Kept[0] == 0) {
			return p
		}
		p.Kept = p.Kept[:len(p.Kept)-1]
		kept = kept[:len(p.Kept)]
		set(kept)
	}
}

// TestPack_AsWhole: Pack, which measures the response without its items
// and adds the items, packs exactly what packing by whole responses packed
// (packWhole): the same
// items, figures and response, for random responses of every kind over
// REST and MCP, budgets from tiny to roomy, with and without Skip,
// KeepFirst and More, and items around the digit boundaries of
// estimated_tokens.
func TestPack_AsWhole(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	sz := sizer(t)
	ids := []any{nil, nil, 7, "req-<&>\"\\\u2028"}
	for iter := range 1500 {
		k := kinds[r.IntN(len(kinds))]
		resp := k.resp(r)
		items := make([]proto.Message, r.IntN(30))
		for i := range items {
			items[i] = k.item(r)
		}
		o := budget.Options{
			MaxBytes:  []int{0, 40, 396, 400, 404, 3996, 4000, 4004, 8000}[r.IntN(9)] + r.IntN(300),
			Carrier:   carrierOf(t, ids[r.IntN(len(ids))]),
			KeepFirst: r.IntN(2) == 0,
			Skip:      r.IntN(2) == 0,
			More:      []int{0, 0, 3, 100000}[r.IntN(4)],
		}
		want := proto.Clone(resp)
		got, err := k.pack(sz, resp, items, o)
		if err != nil {
			t.Fatalf("%d/%s: %v", iter, k.name, err)
		}
		var p budget.Packed
		switch w := want.(type) {
		case *hearthv1.BootstrapResponse:
			p = packWhole(t, w, w.SetItems, typed[*hearthv1.BootstrapItem](items), o)
		case *hearthv1.SearchResponse:
			p = packWhole(t, w, w.SetHits, typed[*hearthv1.SearchHit](items), o)
		case *hearthv1.GetResponse:
			p = packWhole(t, w, w.SetRecords, typed[*hearthv1.Record](items), o)
		case *hearthv1.ContextResponse:
			p = packWhole(t, w, w.SetRecords, typed[*hearthv1.Record](items), o)
		case *hearthv1.TimelineResponse:
			p = packWhole(t, w, w.SetRecords, typed[*hearthv1.Record](items), o)
		default:
			t.Fatalf("no packWhole for %T", w)
		}
		if !slices.Equal(got.Kept, p.Kept) || got.LeftOut != p.LeftOut || got.JSON != p.JSON || got.Sent != p.Sent {
			t.Fatalf("%d/%s/%+v: packed %+v, by whole responses %+v", iter, k.name, o, got, p)
		}
		if !proto.Equal(resp, want) {
			t.Fatalf("%d/%s/%+v: the response differs from the one packed by whole responses", iter, k.name, o)
		}
	}
}

func typed[T proto.Message](items []proto.Message) []T {
	out := make([]T, len(items))
	for i, it := range items {
		out[i] = it.(T)
	}
	return out
}

// countingSizer is a Sizer over marshal that counts the timeline
// responses it marshals with records in them, and the records alone.
func countingSizer(tb testing.TB, marshal func(proto.Message) ([]byte, error), whole, item *int) *budget.Sizer {
	tb.Helper()
	sz, err := budget.NewSizer(func(m proto.Message) ([]byte, error) {
		switch m := m.(type) {
		case *hearthv1.TimelineResponse:
			if len(m.GetRecords()) > 0 {
				*whole++
			}
		case *hearthv1.Record:
			*item++
		}
		return marshal(m)
	})
	if err != nil {
		tb.Fatal(err)
	}
	return sz
}

// TestPack_NeverMarshalsWhole: over the transports' marshal function, Pack
// marshals each item it considers once and never the whole response with
// its items: every measure of a response is of the response without them
// (TestPack_AsWhole holds the sums to the whole).
func TestPack_NeverMarshalsWhole(t *testing.T) {
	t.Parallel()
	var whole, item int
	sz := countingSizer(t, gateway.MarshalResult, &whole, &item)
	r := rand.New(rand.NewPCG(10, 11))
	items := make([]*hearthv1.Record, 20)
	for i := range items {
		items[i] = record(r)
	}
	for _, maxBytes := range []int{100, 3000, 8000, 1 << 20} {
		whole, item = 0, 0
		resp := &hearthv1.TimelineResponse{}
		p, err := budget.Pack(sz, resp, resp.SetRecords, items, budget.Options{MaxBytes: maxBytes, KeepFirst: true})
		if err != nil {
			t.Fatal(err)
		}
		if whole != 0 || item > len(p.Kept)+1 {
			t.Errorf("budget %d: %d items kept; marshaled the whole response %d times and %d items, want never and at most %d",
				maxBytes, len(p.Kept), whole, item, len(p.Kept)+1)
		}
	}
}

// TestPackFunc: PackFunc packs what Pack packs, asks for each item once and
// in order, and without Skip asks for none after the first that does not
// fit.
func TestPackFunc(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(12, 13))
	sz := sizer(t)
	for iter := range 300 {
		items := make([]*hearthv1.Record, r.IntN(25))
		for i := range items {
			items[i] = record(r)
		}
		o := budget.Options{MaxBytes: r.IntN(12000), KeepFirst: r.IntN(2) == 0, Skip: r.IntN(4) == 0, More: r.IntN(3)}
		want := &hearthv1.TimelineResponse{}
		wp, err := budget.Pack(sz, want, want.SetRecords, items, o)
		if err != nil {
			t.Fatal(err)
		}
		var asked []int
		got := &hearthv1.TimelineResponse{}
		gp, err := budget.PackFunc(sz, got, got.SetRecords, len(items), func(i int) (*hearthv1.Record, error) {
			asked = append(asked, i)
			return items[i], nil
		}, o)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(gp.Kept, wp.Kept) || gp.LeftOut != wp.LeftOut || gp.JSON != wp.JSON || gp.Sent != wp.Sent || !proto.Equal(got, want) {
			t.Fatalf("%d/%+v: PackFunc %+v, Pack %+v", iter, o, gp, wp)
		}
		for i, a := range asked {
			if a != i {
				t.Fatalf("%d/%+v: asked for %v, want 0, 1, 2, …", iter, o, asked)
			}
		}
		if m := len(asked); m < len(items) && (o.Skip || slices.Contains(gp.Kept, m-1)) {
			t.Fatalf("%d/%+v: asked for %d of %d items, the last kept %v", iter, o, m, len(items), gp.Kept)
		}
	}
	boom := errors.New("boom")
	resp := &hearthv1.TimelineResponse{}
	if _, err := budget.PackFunc(sz, resp, resp.SetRecords, 3, func(int) (*hearthv1.Record, error) { return nil, boom }, budget.Options{MaxBytes: 100}); err != boom {
		t.Errorf("item's error: got %v", err)
	}
}

// TestPack_OtherMarshal: with a marshal function that leaves an empty
// list out (protojson without EmitDefaultValues), the response's JSON is
// not its JSON without items plus the items; Pack notices, measures whole
// responses and still reports what is received.
func TestPack_OtherMarshal(t *testing.T) {
	t.Parallel()
	marshal := protojson.MarshalOptions{UseProtoNames: true}.Marshal
	var whole, item int
	sz := countingSizer(t, marshal, &whole, &item)
	r := rand.New(rand.NewPCG(8, 9))
	for iter := range 200 {
		resp := &hearthv1.TimelineResponse{}
		items := make([]*hearthv1.Record, r.IntN(12))
		for i := range items {
			items[i] = record(r)
		}
		o := budget.Options{MaxBytes: 200 + r.IntN(8000), KeepFirst: r.IntN(2) == 0}
		p, err := budget.Pack(sz, resp, resp.SetRecords, items, o)
		if err != nil {
			t.Fatal(err)
		}
		b, err := marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		if p.JSON != len(b) || resp.GetEstimatedTokens() != budget.Tokens(len(b)) || len(resp.GetRecords()) != len(p.Kept) {
			t.Fatalf("%d: packed %+v with estimated_tokens %d, received %d bytes", iter, p, resp.GetEstimatedTokens(), len(b))
		}
		if len(b) > o.MaxBytes && len(p.Kept) > 0 && !(o.KeepFirst && len(p.Kept) == 1) {
			t.Fatalf("%d: %d bytes over the budget of %d with %d items", iter, len(b), o.MaxBytes, len(p.Kept))
		}
	}
	if whole == 0 {
		t.Errorf("never marshaled a whole response: the sums were trusted")
	}
}

func TestPack(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	sz := sizer(t)
	items := make([]*hearthv1.BootstrapItem, 10)
	for i := range items {
		items[i] = &hearthv1.BootstrapItem{Id: id26(r), Type: "decision", Title: strings.Repeat("t", 10*i), Reason: "durable"}
	}

	t.Run("OKEverything", func(t *testing.T) {
		resp := &hearthv1.BootstrapResponse{Namespace: "global"}
		p, err := budget.Pack(sz, resp, resp.SetItems, items, budget.Options{MaxBytes: 4000})
		if err != nil || len(p.Kept) != len(items) || resp.GetTruncated() || resp.GetLeftOut() != 0 {
			t.Fatalf("got %+v, %v, resp %v", p, err, resp)
		}
	})

	t.Run("OKSkip", func(t *testing.T) {
		big := slices.Clone(items)
		big[1] = &hearthv1.BootstrapItem{Id: id26(r), Type: "decision", Title: strings.Repeat("b", 850), Reason: "durable"}
		resp := &hearthv1.BootstrapResponse{Namespace: "global"}
		p, err := budget.Pack(sz, resp, resp.SetItems, big, budget.Options{MaxBytes: 1000, Skip: true, More: 5})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Kept) < 2 || p.Kept[0] != 0 || p.Kept[1] != 2 {
			t.Errorf("kept %v, want 0, 2, … (the big item passed over)", p.Kept)
		}
		if want := uint32(len(big) + 5 - len(p.Kept)); resp.GetLeftOut() != want || !resp.GetTruncated() {
			t.Errorf("left_out %d truncated %v, want %d true", resp.GetLeftOut(), resp.GetTruncated(), want)
		}
	})

	t.Run("OKKeepFirst", func(t *testing.T) {
		resp := &hearthv1.GetResponse{}
		huge := []*hearthv1.Record{{Id: "A", Content: strings.Repeat("x", 500)}, {Id: "B"}}
		n, err := budget.Fit(sz, resp, resp.SetRecords, huge, 10, true)
		if err != nil || n != 1 || len(resp.GetRecords()) != 1 || resp.GetLeftOut() != 1 {
			t.Errorf("keepFirst: kept %d (%v), resp %v", n, err, resp)
		}
		n, err = budget.Fit(sz, resp, resp.SetRecords, huge, 10, false)
		if err != nil || n != 0 || len(resp.GetRecords()) != 0 || resp.GetLeftOut() != 2 {
			t.Errorf("no keepFirst: kept %d (%v), resp %v", n, err, resp)
		}
	})
}

func TestShorten(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		s    string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"the quick brown fox", 12, "the quick…"},
		{"the quick brown fox", 13, "the quick…"},
		{"the quick  brown fox", 16, "the quick…"},
		{"supercalifragilistic", 10, "superca…"},
		{"日本語のテキスト", 10, "日本…"},
		{"  leading", 6, "  l…"},
		{"abc", 2, ""},
		{"abcd", 3, "…"},
		{"a\nb c", 4, "a…"},
	} {
		if got := budget.Shorten(tt.s, tt.max); got != tt.want {
			t.Errorf("Shorten(%q, %d) = %q, want %q", tt.s, tt.max, got, tt.want)
		}
	}
}

// FuzzShorten: the result is within max, valid UTF-8 from valid input, the
// input itself when it fits, and otherwise a prefix cut at white space (or
// inside a first word) followed by the ellipsis.
func FuzzShorten(f *testing.F) {
	for _, s := range []string{"the quick brown fox", "日本語 のテキスト", "", "  x", "word\tword\nword", "🙂🙂🙂 🙂"} {
		f.Add(s, 7)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		max %= 300
		got := budget.Shorten(s, max)
		switch {
		case len(s) <= max:
			if got != s {
				t.Fatalf("Shorten(%q, %d) = %q, want it unchanged", s, max, got)
			}
			return
		case max < len(budget.Ellipsis):
			if got != "" {
				t.Fatalf("Shorten(%q, %d) = %q, want \"\"", s, max, got)
			}
			return
		}
		if len(got) > max || !strings.HasSuffix(got, budget.Ellipsis) {
			t.Fatalf("Shorten(%q, %d) = %q: over max or no ellipsis", s, max, got)
		}
		head := strings.TrimSuffix(got, budget.Ellipsis)
		if !strings.HasPrefix(s, head) || (utf8.ValidString(s) && !utf8.ValidString(got)) {
			t.Fatalf("Shorten(%q, %d) = %q: not a clean prefix", s, max, got)
		}
		next, _ := utf8.DecodeRuneInString(s[len(head):])
		atSpace := unicode.IsSpace(next)
		noSpace := strings.IndexFunc(strings.TrimLeftFunc(s[:max-len(budget.Ellipsis)+1], unicode.IsSpace), unicode.IsSpace) < 0
		if !atSpace && !noSpace && utf8.ValidString(s) {
			t.Fatalf("Shorten(%q, %d) = %q: cut inside a word", s, max, got)
		}
	})
}

func TestSnippet(t *testing.T) {
	t.Parallel()
	if got := budget.Snippet("  one\n\n two\tthree  "); got != "one two three" {
		t.Errorf("whitespace: got %q", got)
	}
	long := strings.Repeat("word ", 100)
	got := budget.Snippet("…" + long + "…")
	if len(got) > budget.MaxSnippetBytes || !strings.HasSuffix(got, "word…") || !strings.HasPrefix(got, "…word") {
		t.Errorf("long: got %q (%d bytes)", got, len(got))
	}
	if got := budget.Snippet(strings.Repeat("x", 1000)); len(got) > budget.MaxSnippetBytes || !strings.HasSuffix(got, "…") {
		t.Errorf("one long word: got %q", got)
	}
	// Snippets that need no tidying are returned as they are: every
	// snippet comes out as if its words were split and joined by one space.
	r := rand.New(rand.NewPCG(7, 7))
	for range 20000 {
		s := nasty(r, r.IntN(60))
		if want := budget.Shorten(strings.Join(strings.Fields(s), " "), budget.MaxSnippetBytes); budget.Snippet(s) != want {
			t.Fatalf("Snippet(%q) = %q, want %q", s, budget.Snippet(s), want)
		}
	}
	for _, s := range []string{"", "one", "one two", "…one two…", " one", "one ", "one  two", "one\u00a0two", "one\u3000two", "x\x85y"} {
		if want := budget.Shorten(strings.Join(strings.Fields(s), " "), budget.MaxSnippetBytes); budget.Snippet(s) != want {
			t.Errorf("Snippet(%q) = %q, want %q", s, budget.Snippet(s), want)
		}
	}
}
