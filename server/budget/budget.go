// Package budget keeps responses within their token budgets (docs/design.md §9). A
// token is estimated as 4 bytes of the JSON the caller receives, so sizes
// are measured on the response as the transports marshal it — a Sizer holds
// that marshal function, handed in by whoever wires the transports — never
// estimated from struct sizes.
//
// Most budgets hold on that JSON: the REST body, which is also the text an
// MCP client hands its model. The bootstrap budget holds on the bytes sent (a
// Carrier says how the transport that asked carries the JSON), so Pack can
// measure a response for an MCP JSON-RPC reply exactly.
//
// Packing is whole items, best first: a response never carries part of an
// item. Every packed response reports estimated_tokens, truncated and
// left_out through the Response interface its message satisfies.
package budget

import (
	"errors"
	"fmt"
	"math"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/sourcecontextpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/typepb"
)

// BytesPerToken is the size of one estimated token.
const BytesPerToken = 4

// Budgets in tokens (docs/design.md §9). The context packet's budget is an option
// (context_budget_tokens, at most hard_context_limit_tokens).
const (
	// Bootstrap is the session-start packet's budget, on the bytes sent (R-B1).
	Bootstrap = 500
	// Search is memory_search's budget (R-B2).
	Search = 750
	// Records is memory_get's and memory_timeline's budget (R-B3).
	Records = 2000
)

// Tokens returns the token estimate for n bytes, rounded up.
func Tokens(n int) uint32 { return uint32((n + BytesPerToken - 1) / BytesPerToken) }

// Response is a budgeted response message: it reports the tokens of its own
// JSON, whether items were left out and how many. The generated hearth.v1
// responses satisfy it, so a renamed field is a compile error.
type Response interface {
	proto.Message
	GetEstimatedTokens() uint32
	SetEstimatedTokens(uint32)
	SetTruncated(bool)
	SetLeftOut(uint32)
}

// Carrier is how a response's JSON reaches its caller (an MCP JSON-RPC
// reply wraps and escapes it), and so how its bytes count. A nil Carrier
// means the JSON itself (REST, gRPC).
type Carrier interface {
	// Size returns the bytes the caller receives for a response whose JSON
	// is b.
	Size(b []byte) int
	// Fragment returns what a piece of that JSON (whole characters) adds to
	// Size.
	Fragment(b []byte) int
}

// Sizer measures responses as the transports marshal them.
type Sizer struct {
	marshal func(proto.Message) ([]byte, error)
	// sep is the bytes the marshal function puts between two list elements.
	sep int
	// split is set when the marshal function writes a message's empty
	// list as [] and a list as its elements' own JSON joined by sep, as
	// protojson does with EmitDefaultValues: the JSON of a response is then
	// its JSON without items plus what its items add.
	split bool
	// fast is set when jsonSize agrees with the marshal function: sizes are
	// then computed without marshaling, where no Carrier needs the bytes.
	fast bool
}

// NewSizer returns a Sizer over marshal, the function that renders a
// response as its caller receives it.
func NewSizer(marshal func(proto.Message) ([]byte, error)) (*Sizer, error) {
	if marshal == nil {
		return nil, errors.New("budget: no marshal function")
	}
	// protojson varies its whitespace per build, but never within one: a
	// list of two nulls shows what it puts between elements.
	two := &structpb.ListValue{Values: []*structpb.Value{structpb.NewNullValue(), structpb.NewNullValue()}}
	b, err := marshal(two)
	if err != nil {
		return nil, fmt.Errorf("budget: measure the list separator: %w", err)
	}
	s := &Sizer{marshal: marshal, sep: len(b) - len("[nullnull]")}
	// A message with a list of none, one and two elements shows whether
	// the list adds exactly its elements.
	var sizes [4]int
	for i, m := range []proto.Message{
		&descriptorpb.DescriptorProto{},
		&descriptorpb.DescriptorProto{Field: []*descriptorpb.FieldDescriptorProto{{}}},
		&descriptorpb.DescriptorProto{Field: []*descriptorpb.FieldDescriptorProto{{}, {}}},
		&descriptorpb.FieldDescriptorProto{},
	} {
		if sizes[i], err = s.Size(m); err != nil {
			return nil, fmt.Errorf("budget: measure a list: %w", err)
		}
	}
	empty, one, pair, elem := sizes[0], sizes[1], sizes[2], sizes[3]
	s.split = one == empty+elem && pair == empty+2*elem+s.sep
	if s.fast, err = s.agrees(sizeProbes()); err != nil {
		return nil, fmt.Errorf("budget: measure a probe: %w", err)
	}
	return s, nil
}

// agrees reports whether jsonSize gives the length of what the marshal
// function writes for every probe: it is the transports' protojson form.
func (s *Sizer) agrees(probes []proto.Message) (bool, error) {
	for _, m := range probes {
		b, err := s.marshal(m)
		if err != nil {
			return false, err
		}
		if n, ok := jsonSize(m.ProtoReflect(), s.sep); !ok || n != len(b) {
			return false, nil
		}
	}
	return true, nil
}

// sizeProbes are messages on which jsonSize must agree with the marshal
// function: proto names unlike their JSON names, fields left at their
// defaults and unset messages, each kind of scalar and escaped strings,
// enums named and unnamed, nested and repeated messages, timestamps with
// each precision.
func sizeProbes() []proto.Message {
	at := func(secs int64, nanos int32) *timestamppb.Timestamp {
		return &timestamppb.Timestamp{Seconds: secs, Nanos: nanos}
	}
	return []proto.Message{
		&typepb.Type{},
		&typepb.Type{
			Name: "a\"b\\c\n\x01\u00e9\u2028<&>", Oneofs: []string{"x", "", "y"}, Syntax: typepb.Syntax_SYNTAX_PROTO3,
			Fields: []*typepb.Field{
				{Kind: typepb.Field_TYPE_STRING, Number: -7, Name: "f", TypeUrl: "t", OneofIndex: 3, Packed: true, JsonName: "j", DefaultValue: "\t"},
				{Kind: 99, Cardinality: typepb.Field_CARDINALITY_REPEATED},
			},
			SourceContext: &sourcecontextpb.SourceContext{FileName: "x.proto"},
		},
		&descriptorpb.UninterpretedOption{
			Name:             []*descriptorpb.UninterpretedOption_NamePart{{NamePart: proto.String("p"), IsExtension: proto.Bool(false)}},
			IdentifierValue:  proto.String("id"),
			PositiveIntValue: proto.Uint64(math.MaxUint64),
			NegativeIntValue: proto.Int64(math.MinInt64),
			DoubleValue:      proto.Float64(1e-7),
			StringValue:      []byte("bytes!"),
		},
		&descriptorpb.UninterpretedOption{DoubleValue: proto.Float64(0.25)},
		at(0, 0), at(1767225600, 189000000), at(-1, 1000), at(253402300799, 999999999),
	}
}

// Size returns the size in bytes of m's JSON as the caller receives it.
func (s *Sizer) Size(m proto.Message) (int, error) {
	if s.fast {
		if n, ok := jsonSize(m.ProtoReflect(), s.sep); ok {
			return n, nil
		}
	}
	b, err := s.marshal(m)
	return len(b), err
}

// Options says how Pack fills a response.
type Options struct {
	// MaxBytes is the budget in bytes, as Carrier counts them.
	MaxBytes int
	// Carrier is how the response travels; nil measures its JSON.
	Carrier Carrier
	// KeepFirst keeps the first item even when it alone is over budget.
	KeepFirst bool
	// Skip passes over an item that does not fit and tries the next;
	// otherwise the first item that does not fit ends the packing.
	Skip bool
	// More counts items that were not offered (beyond the items given) and
	// so are left out as well.
	More int
}

// Packed is the outcome of Pack.
type Packed struct {
	// Kept holds the indexes of the items packed, in order.
	Kept []int
	// LeftOut counts the items offered but not packed, plus Options.More.
	LeftOut int
	// JSON is the size of the response's JSON; Sent the bytes its caller
	// receives, as Options.Carrier carries it.
	JSON, Sent int
}

// Fits reports whether the packed response is within budget.
func (p Packed) Fits(o Options) bool { return p.Sent <= o.MaxBytes }

// Pack sets resp's list to items through set (the response's generated
// setter, e.g. resp.SetHits), best first, as many as fit in o.MaxBytes as
// o.Carrier measures the response. Items are packed whole. It sets
// estimated_tokens to the tokens of the final JSON, left_out to the items
// not packed plus o.More, and truncated when left_out is not 0. Other fields
// of resp must be set before the call.
//
// The response can exceed the budget only when nothing else is possible:
// its fields without items are already over (Packed.Fits says so), or the
// first item is kept by o.KeepFirst.
func Pack[R Response, T proto.Message](s *Sizer, resp R, set func([]T), items []T, o Options) (Packed, error) {
	return PackFunc(s, resp, set, len(items), func(i int) (T, error) { return items[i], nil }, o)
}

// PackFunc is Pack over n items that item returns, each asked for once and
// in order, as packing reaches it: without o.Skip, no item after the first
// that does not fit is asked for, so a caller can read items as they are
// needed. An error from item is returned.
func PackFunc[R Response, T proto.Message](s *Sizer, resp R, set func([]T), n int, item func(i int) (T, error), o Options) (Packed, error) {
	set(nil)
	offered := n + o.More

	// Measure the response without items, its reporting fields at their
	// widest (every item left out; "false" is longer than "true";
	// estimated_tokens at the budget), then each item alone: the list adds
	// the items' bytes and a separator between two.
	setReport(resp, uint32(offered), false, Tokens(o.MaxBytes))
	base, err := s.measure(resp, o.Carrier)
	if err != nil {
		return Packed{}, err
	}
	var (
		p    Packed
		kept []T
		// adds[i] is what the first i+1 kept items add to the response
		// without items.
		adds []sizes
	)
	size := base.sent
	for i := range n {
		it, err := item(i)
		if err != nil {
			return Packed{}, err
		}
		add, err := s.measureItem(it, o.Carrier)
		if err != nil {
			return Packed{}, err
		}
		if len(p.Kept) > 0 {
			add.json += s.sep
			add.sent += s.sep
		}
		if size+add.sent > o.MaxBytes && !(o.KeepFirst && i == 0) {
			if o.Skip {
				continue
			}
			break
		}
		size += add.sent
		if len(adds) > 0 {
			add.json += adds[len(adds)-1].json
			add.sent += adds[len(adds)-1].sent
		}
		adds = append(adds, add)
		p.Kept = append(p.Kept, i)
		kept = append(kept, it)
	}
	set(kept)

	// The real figures can only be smaller than the widest; confirm them,
	// and give back items should a measure have been wrong. When the
	// marshal function splits (Sizer.split), the response's JSON is its
	// JSON without items plus what the kept items add: every round then
	// marshals only the small response without items. Otherwise each
	// round marshals the whole response.
	measure := func([]T) (sizes, error) { return s.measure(resp, o.Carrier) }
	if s.split {
		measure = func(kept []T) (sizes, error) {
			set(nil)
			m, err := s.measure(resp, o.Carrier)
			set(kept)
			if len(kept) > 0 {
				m.json += adds[len(kept)-1].json
				m.sent += adds[len(kept)-1].sent
			}
			return m, err
		}
	}
	return settle(s, resp, set, kept, p, o, offered, measure)
}

// settle sets the reporting fields of resp, holding kept (the items of p),
// to their final values, giving back items from the end while the response
// measured by measure is over the budget.
func settle[R Response, T proto.Message](s *Sizer, resp R, set func([]T), kept []T, p Packed, o Options, offered int, measure func([]T) (sizes, error)) (Packed, error) {
	for {
		p.LeftOut = offered - len(p.Kept)
		m, err := s.report(resp, uint32(p.LeftOut), func() (sizes, error) { return measure(kept) })
		if err != nil {
			return Packed{}, err
		}
		p.JSON, p.Sent = m.json, m.sent
		if p.Sent <= o.MaxBytes || len(p.Kept) == 0 || (o.KeepFirst && len(p.Kept) == 1 && p.Kept[0] == 0) {
			return p, nil
		}
		p.Kept = p.Kept[:len(p.Kept)-1]
		kept = kept[:len(p.Kept)]
		set(kept)
	}
}

// Fit packs items into resp through set, stopping at the first item that
// does not fit, within maxTokens of JSON; with keepFirst the first item is
// kept even if it alone exceeds the budget. It sets estimated_tokens,
// truncated and left_out (see Pack) and returns how many items it kept,
// always the first ones.
func Fit[R Response, T proto.Message](s *Sizer, resp R, set func([]T), items []T, maxTokens int, keepFirst bool) (int, error) {
	p, err := Pack(s, resp, set, items, Options{MaxBytes: maxTokens * BytesPerToken, KeepFirst: keepFirst})
	return len(p.Kept), err
}

// FitFunc is Fit over n items that item returns as packing reaches them
// (see PackFunc): no item after the first that does not fit is asked for.
func FitFunc[R Response, T proto.Message](s *Sizer, resp R, set func([]T), n int, item func(i int) (T, error), maxTokens int, keepFirst bool) (int, error) {
	p, err := PackFunc(s, resp, set, n, item, Options{MaxBytes: maxTokens * BytesPerToken, KeepFirst: keepFirst})
	return len(p.Kept), err
}

// sizes is a response's measure: its JSON and the bytes sent.
type sizes struct{ json, sent int }

func (s *Sizer) measure(m proto.Message, c Carrier) (sizes, error) {
	if c == nil {
		n, err := s.Size(m)
		return sizes{json: n, sent: n}, err
	}
	b, err := s.marshal(m)
	if err != nil {
		return sizes{}, err
	}
	n := len(b)
	if c != nil {
		n = c.Size(b)
	}
	return sizes{json: len(b), sent: n}, nil
}

// measureItem is what item adds to a response as a list element, before
// the separator: its JSON and as c carries it.
func (s *Sizer) measureItem(item proto.Message, c Carrier) (sizes, error) {
	if c == nil {
		n, err := s.Size(item)
		return sizes{json: n, sent: n}, err
	}
	b, err := s.marshal(item)
	if err != nil {
		return sizes{}, err
	}
	return sizes{json: len(b), sent: c.Fragment(b)}, nil
}

// setReport sets the reporting fields.
func setReport(r Response, leftOut uint32, truncated bool, tokens uint32) {
	r.SetLeftOut(leftOut)
	r.SetTruncated(truncated)
	r.SetEstimatedTokens(tokens)
}

// report sets the reporting fields for leftOut dropped items and returns the
// response's final measure, as measure takes it. estimated_tokens describes
// the JSON that carries it, so it is set until it agrees with its own
// response: a change of one digit moves the size by a byte, so this settles
// within a few rounds.
func (s *Sizer) report(resp Response, leftOut uint32, measure func() (sizes, error)) (sizes, error) {
	tokens := resp.GetEstimatedTokens()
	for range 8 {
		setReport(resp, leftOut, leftOut > 0, tokens)
		m, err := measure()
		if err != nil || Tokens(m.json) == tokens {
			return m, err
		}
		tokens = Tokens(m.json)
	}
	return sizes{}, fmt.Errorf("budget: estimated_tokens of %s does not settle", resp.ProtoReflect().Descriptor().FullName())
}
