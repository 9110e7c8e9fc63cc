// Package budget keeps responses within their token budgets (SPEC §9). A
// token is estimated as 4 bytes of the JSON the caller receives, so sizes
// are measured on the response exactly as the REST gateway and the MCP
// bridge marshal it (gateway.MarshalResult), never estimated from struct
// sizes.
//
// Most budgets hold on that JSON: the REST body, which is also the text an
// MCP client hands its model. The bootstrap budget holds on the wire: the
// whole REST body, or the whole JSON-RPC reply over MCP, where the JSON is a
// string (escaped) inside an envelope. The bridge tells the service which
// transport asked, and the envelope's size, in gRPC metadata (see Wire), and
// Pack measures a response for that transport exactly.
//
// Packing is whole items, best first: a response never carries part of an
// item. Every packed response reports estimated_tokens (the tokens of its
// JSON), truncated and left_out, where the message has those fields.
package budget

import (
	"fmt"
	"sync"

	"github.com/hearth-memory/hearth/gateway"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// BytesPerToken is the size of one estimated token.
const BytesPerToken = 4

// Budgets in tokens (SPEC §9). The context packet's budget is an option
// (context_budget_tokens, at most hard_context_limit_tokens).
const (
	// Bootstrap is the session-start packet's budget, on the wire (R-B1).
	Bootstrap = 500
	// Search is memory_search's budget (R-B2).
	Search = 750
	// Records is memory_get's and memory_timeline's budget (R-B3).
	Records = 2000
)

// Tokens returns the token estimate for n bytes, rounded up.
func Tokens(n int) uint32 { return uint32((n + BytesPerToken - 1) / BytesPerToken) }

// Size returns the size in bytes of m's JSON as the caller receives it.
func Size(m proto.Message) (int, error) {
	b, err := gateway.MarshalResult(m)
	return len(b), err
}

// Options says how Pack fills a response.
type Options struct {
	// MaxBytes is the budget in bytes, measured by Wire.
	MaxBytes int
	// Wire is how the response travels; the zero Wire measures its JSON.
	Wire Wire
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
	// JSON is the size of the response's JSON; Wire its size as Options.Wire
	// measures it.
	JSON, Wire int
}

// Fits reports whether the packed response is within budget.
func (p Packed) Fits(o Options) bool { return p.Wire <= o.MaxBytes }

// Pack sets the repeated message field named list of resp to items, best
// first, as many as fit in o.MaxBytes as o.Wire measures the response.
// Items are packed whole. It sets estimated_tokens, truncated and left_out
// where resp has them: estimated_tokens to the tokens of the final JSON,
// left_out to the items not packed plus o.More, truncated when left_out is
// not 0. Other fields of resp must be set before the call.
//
// The response can exceed the budget only when nothing else is possible:
// its fields without items are already over (Packed.Fits says so), or the
// first item is kept by o.KeepFirst.
func Pack[T proto.Message](resp proto.Message, list protoreflect.Name, items []T, o Options) (Packed, error) {
	r := resp.ProtoReflect()
	fd := r.Descriptor().Fields().ByName(list)
	if fd == nil || !fd.IsList() || fd.Message() == nil {
		return Packed{}, fmt.Errorf("budget: %s has no message list %q", r.Descriptor().FullName(), list)
	}
	l := r.Mutable(fd).List()
	l.Truncate(0)
	offered := len(items) + o.More

	// Measure the response without items, its reporting fields at their
	// widest (every item left out; "false" is longer than "true";
	// estimated_tokens at the budget), then each item alone: the list adds
	// the items' bytes and a separator between two.
	setReport(r, uint32(offered), false, Tokens(o.MaxBytes))
	base, err := measure(resp, o.Wire)
	if err != nil {
		return Packed{}, err
	}
	sep, err := separator()
	if err != nil {
		return Packed{}, err
	}
	var p Packed
	size := base.wire
	for i, it := range items {
		b, err := gateway.MarshalResult(it)
		if err != nil {
			return Packed{}, err
		}
		n := o.Wire.fragment(b)
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
		l.Append(protoreflect.ValueOfMessage(it.ProtoReflect()))
	}

	// The real figures can only be smaller than the widest; confirm them on
	// the marshaled response, and give back items should a measure have
	// been wrong.
	for {
		p.LeftOut = offered - len(p.Kept)
		m, err := report(resp, o.Wire, uint32(p.LeftOut))
		if err != nil {
			return Packed{}, err
		}
		p.JSON, p.Wire = m.json, m.wire
		if p.Wire <= o.MaxBytes || len(p.Kept) == 0 || (o.KeepFirst && len(p.Kept) == 1 && p.Kept[0] == 0) {
			return p, nil
		}
		p.Kept = p.Kept[:len(p.Kept)-1]
		l.Truncate(len(p.Kept))
	}
}

// Fit packs items into the field list of resp, stopping at the first item
// that does not fit, within maxTokens of JSON; with keepFirst the first item
// is kept even if it alone exceeds the budget. It sets estimated_tokens,
// truncated and left_out (see Pack) and returns how many items it kept,
// always the first ones.
func Fit[T proto.Message](resp proto.Message, list protoreflect.Name, items []T, maxTokens int, keepFirst bool) (int, error) {
	p, err := Pack(resp, list, items, Options{MaxBytes: maxTokens * BytesPerToken, KeepFirst: keepFirst})
	return len(p.Kept), err
}

// sizes is a response's measure: its JSON and on its wire.
type sizes struct{ json, wire int }

func measure(m proto.Message, w Wire) (sizes, error) {
	b, err := gateway.MarshalResult(m)
	if err != nil {
		return sizes{}, err
	}
	return sizes{json: len(b), wire: w.Size(b)}, nil
}

// setReport sets the reporting fields resp has.
func setReport(r protoreflect.Message, leftOut uint32, truncated bool, tokens uint32) {
	fields := r.Descriptor().Fields()
	if fd := fields.ByName("left_out"); fd != nil {
		r.Set(fd, protoreflect.ValueOfUint32(leftOut))
	}
	if fd := fields.ByName("truncated"); fd != nil {
		r.Set(fd, protoreflect.ValueOfBool(truncated))
	}
	if fd := fields.ByName("estimated_tokens"); fd != nil {
		r.Set(fd, protoreflect.ValueOfUint32(tokens))
	}
}

// report sets the reporting fields for leftOut dropped items and returns the
// response's final measure. estimated_tokens describes the JSON that carries
// it, so it is set until it agrees with its own response: a change of one
// digit moves the size by a byte, so this settles within a few rounds.
func report(resp proto.Message, w Wire, leftOut uint32) (sizes, error) {
	r := resp.ProtoReflect()
	est := r.Descriptor().Fields().ByName("estimated_tokens")
	tokens := uint32(0)
	if est != nil {
		tokens = uint32(r.Get(est).Uint())
	}
	for range 8 {
		setReport(r, leftOut, leftOut > 0, tokens)
		m, err := measure(resp, w)
		if err != nil || est == nil || Tokens(m.json) == tokens {
			return m, err
		}
		tokens = Tokens(m.json)
	}
	return sizes{}, fmt.Errorf("budget: estimated_tokens of %s does not settle", r.Descriptor().FullName())
}

var (
	sepOnce  sync.Once
	sepBytes int
	sepErr   error
)

// separator returns the bytes protojson puts between two list elements: a
// comma, and a space in builds where protojson adds one (it varies its
// whitespace per build, but never within one).
func separator() (int, error) {
	sepOnce.Do(func() {
		two := &structpb.ListValue{Values: []*structpb.Value{structpb.NewNullValue(), structpb.NewNullValue()}}
		b, err := gateway.MarshalResult(two)
		if err != nil {
			sepErr = err
			return
		}
		sepBytes = len(b) - len("[nullnull]")
	})
	return sepBytes, sepErr
}
