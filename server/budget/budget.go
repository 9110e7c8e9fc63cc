// Package budget keeps responses within their token budgets. A token is
// estimated as 4 bytes of the JSON the caller receives (SPEC §9), so sizes
// are measured by marshaling the response exactly as the REST gateway and the
// MCP bridge do (gateway.MarshalResult), never estimated from struct sizes.
package budget

import (
	"fmt"

	"github.com/hearth-memory/hearth/gateway"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// BytesPerToken is the size of one estimated token.
const BytesPerToken = 4

// Budgets in tokens (SPEC §9).
const (
	Search  = 750
	Records = 2000
)

// Tokens returns the token estimate for n bytes, rounded up.
func Tokens(n int) uint32 { return uint32((n + BytesPerToken - 1) / BytesPerToken) }

// Size returns the size in bytes of m as the caller receives it.
func Size(m proto.Message) (int, error) {
	b, err := gateway.MarshalResult(m)
	return len(b), err
}

// Fit appends items, best first, to the repeated message field named list of
// resp while the marshaled response stays within maxTokens. Items are packed
// whole: the first that does not fit ends the packing and it and every later
// item are left out. When keepFirst is set the first item is kept even if it
// alone exceeds the budget. Fit sets the response's estimated_tokens,
// truncated and left_out fields where they exist, and returns how many items
// were kept.
func Fit[T proto.Message](resp proto.Message, list protoreflect.Name, items []T, maxTokens int, keepFirst bool) (int, error) {
	r := resp.ProtoReflect()
	fd := r.Descriptor().Fields().ByName(list)
	if fd == nil || !fd.IsList() || fd.Message() == nil {
		return 0, fmt.Errorf("budget: %s has no message list %q", r.Descriptor().FullName(), list)
	}
	maxBytes := maxTokens * BytesPerToken
	l := r.Mutable(fd).List()
	l.Truncate(0)

	// Estimate each item's share cheaply, then confirm with a real marshal
	// and back off while the response is over.
	base, err := finish(resp, len(items))
	if err != nil {
		return 0, err
	}
	size := base
	kept := 0
	for i, it := range items {
		n, err := Size(it)
		if err != nil {
			return 0, err
		}
		const sep = 2 // a comma and the space protojson may add
		if size+n+sep > maxBytes && !(keepFirst && i == 0) {
			break
		}
		size += n + sep
		l.Append(protoreflect.ValueOfMessage(it.ProtoReflect()))
		kept++
	}
	for {
		total, err := finish(resp, len(items)-kept)
		if err != nil {
			return 0, err
		}
		if total <= maxBytes || kept == 0 || (keepFirst && kept == 1) {
			return kept, nil
		}
		kept--
		l.Truncate(kept)
	}
}

// finish sets the reporting fields for leftOut dropped items and returns the
// final size. estimated_tokens describes the response that carries it, so it
// is recomputed until the figure is stable.
func finish(resp proto.Message, leftOut int) (int, error) {
	r := resp.ProtoReflect()
	fields := r.Descriptor().Fields()
	if fd := fields.ByName("left_out"); fd != nil {
		r.Set(fd, protoreflect.ValueOfUint32(uint32(leftOut)))
	}
	if fd := fields.ByName("truncated"); fd != nil {
		r.Set(fd, protoreflect.ValueOfBool(leftOut > 0))
	}
	est := fields.ByName("estimated_tokens")
	var size int
	for range 4 {
		n, err := Size(resp)
		if err != nil {
			return 0, err
		}
		size = n
		if est == nil || r.Get(est).Uint() == uint64(Tokens(n)) {
			break
		}
		r.Set(est, protoreflect.ValueOfUint32(Tokens(n)))
	}
	return size, nil
}
