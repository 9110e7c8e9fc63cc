package budget_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hearth-memory/hearth/gateway"
	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/budget"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// randomText mixes ASCII, control characters (escaped as \u00XX), quotes
// and backslashes, multi-byte characters and the line separators protojson
// may escape.
func randomText(r *rand.Rand, n int) string {
	parts := []string{"a", "Z", " ", "\x01", "\x1f", "\"", "\\", "<", "&", "é", "数", "🚀", "\u2028", "\t", "\n"}
	var b strings.Builder
	for range n {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

func randomRecord(r *rand.Rand) *hearthv1.Record {
	ts := timestamppb.New(time.Unix(r.Int64N(1<<36), r.Int64N(1e9)))
	rec := &hearthv1.Record{
		Id: randomText(r, r.IntN(30)), Namespace: randomText(r, r.IntN(40)), Type: randomText(r, r.IntN(12)),
		Title: randomText(r, r.IntN(200)), Content: randomText(r, r.IntN(2000)), Status: randomText(r, r.IntN(12)),
		Revision: r.Uint32(), Writer: randomText(r, r.IntN(64)), Confidence: r.Float64(),
		EffectiveConfidence: []float64{0, 1, -1e-308, math.MaxFloat64, 0.123456789012345, math.Inf(-1)}[r.IntN(6)],
		ProofCount:          r.Uint32(), RefutationCount: r.Uint32(), Supersedes: randomText(r, r.IntN(26)),
		Source: randomText(r, r.IntN(10)),
	}
	if r.IntN(2) == 0 {
		rec.CreatedAt, rec.UpdatedAt = ts, ts
	}
	for range r.IntN(8) {
		rec.Topics = append(rec.Topics, randomText(r, r.IntN(40)))
	}
	for range r.IntN(6) {
		rec.Anchors = append(rec.Anchors, &hearthv1.Anchor{Anchor: randomText(r, r.IntN(100)), State: "unavailable", CheckedAt: ts,
			CheckedBy: randomText(r, r.IntN(64))})
	}
	return rec
}

// TestBound: no protojson form of a message is longer than its Bound, and
// Fits answers as the exact size does.
func TestBound(t *testing.T) {
	t.Parallel()
	forms := map[string]protojson.MarshalOptions{
		"compact":     {},
		"proto":       {UseProtoNames: true},
		"defaults":    {UseProtoNames: true, EmitDefaultValues: true},
		"unpopulated": {EmitUnpopulated: true},
		"indented":    {Multiline: true, Indent: "    ", EmitUnpopulated: true},
	}
	r := rand.New(rand.NewPCG(5, 5))
	var msgs []proto.Message
	for range 300 {
		msgs = append(msgs, randomRecord(r))
	}
	list, _ := structpb.NewList([]any{"a\x01", 1.5, true, nil, map[string]any{"k\"": []any{"x"}}})
	st, _ := structpb.NewStruct(map[string]any{"\x00key": "v\u2028", "n": -1e300, "l": list.AsSlice()})
	msgs = append(msgs, &hearthv1.Record{}, st, list, structpb.NewStringValue(randomText(r, 500)))
	for name, opts := range forms {
		for i, m := range msgs {
			b, err := opts.Marshal(m)
			if err != nil {
				t.Fatalf("%s %d: %v", name, i, err)
			}
			if bound := budget.Bound(m); len(b) > bound {
				t.Errorf("%s %d: %d bytes of JSON over the bound %d", name, i, len(b), bound)
			}
		}
	}

	sz, err := budget.NewSizer(gateway.MarshalResult)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range msgs {
		n, err := sz.Size(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, limit := range []int{n - 1, n, 7600} {
			fits, size, err := sz.Fits(m, limit)
			if err != nil || fits != (n <= limit) || !fits && size != n {
				t.Errorf("%d: Fits(%d) = %v, %d, %v; its size is %d", i, limit, fits, size, err, n)
			}
		}
	}
	// Invalid UTF-8 is measured, and refused as the marshal refuses it.
	if _, _, err := sz.Fits(&hearthv1.Record{Title: "\xff"}, 7600); err == nil {
		t.Error("Fits of invalid UTF-8: no error, want the marshal's")
	}
	// A record of everyday size fits without a marshal: its bound is well
	// under the records budget.
	everyday := &hearthv1.Record{Title: strings.Repeat("w", 80), Content: strings.Repeat("word ", 400),
		CreatedAt: timestamppb.Now(), UpdatedAt: timestamppb.Now(), Topics: []string{"billing"}}
	if b := budget.Bound(everyday); b > 5000 {
		t.Errorf("Bound of a 2 KB record = %d, want it near its size", b)
	}
	// An Any is measured, never bounded.
	a, _ := anypb.New(st)
	if b := budget.Bound(a); b < 1<<40 {
		t.Errorf("Bound of an Any = %d, want it unbounded", b)
	}
}
