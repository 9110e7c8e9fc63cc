package budget_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/gateway"
	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/budget"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// fill sets a random selection of m's fields to values chosen to be hard to
// size: escapes, invalid UTF-8, floats at the edges of each form, 64-bit
// integers, unknown enum numbers, timestamps of each precision and out of
// range, lists of none to three, maps, nested messages.
func fill(r *rand.Rand, m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if r.IntN(4) == 0 {
			continue
		}
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			for range r.IntN(4) {
				if fd.Kind() == protoreflect.MessageKind {
					if depth < 3 {
						e := l.NewElement()
						fill(r, e.Message(), depth+1)
						l.Append(e)
					}
					continue
				}
				l.Append(scalar(r, fd))
			}
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for range r.IntN(3) {
				k := scalar(r, fd.MapKey()).MapKey()
				if fd.MapValue().Kind() == protoreflect.MessageKind {
					if depth < 3 {
						v := mp.NewValue()
						fill(r, v.Message(), depth+1)
						mp.Set(k, v)
					}
					continue
				}
				mp.Set(k, scalar(r, fd.MapValue()))
			}
		case fd.Kind() == protoreflect.MessageKind:
			if depth < 3 {
				v := m.NewField(fd)
				fill(r, v.Message(), depth+1)
				m.Set(fd, v)
			}
		default:
			m.Set(fd, scalar(r, fd))
		}
	}
	if m.Descriptor().FullName() == "google.protobuf.Timestamp" && r.IntN(8) != 0 {
		// Mostly in range, in each precision.
		fs := m.Descriptor().Fields()
		m.Set(fs.ByNumber(1), protoreflect.ValueOfInt64(r.Int64N(253402300799+62135596800)-62135596800))
		nanos := []int32{0, 189 * 1e6, 189123 * 1e3, 189123456, 999999999}[r.IntN(5)]
		m.Set(fs.ByNumber(2), protoreflect.ValueOfInt32(nanos))
	}
}

func scalar(r *rand.Rand, fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(r.IntN(2) == 0)
	case protoreflect.StringKind:
		s := nasty(r, r.IntN(60))
		for range r.IntN(3) {
			s += []string{"\b", "\f", "\r", "\x00", "\x7f", "\ufffd", "\U0010ffff", "\"\\"}[r.IntN(8)]
		}
		if r.IntN(40) == 0 {
			s += "\xff" // invalid UTF-8: both must refuse it
		}
		return protoreflect.ValueOfString(s)
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte(nasty(r, r.IntN(20))))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32([]int32{0, -1, 7, math.MaxInt32, math.MinInt32}[r.IntN(5)])
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32([]uint32{0, 1, 42, math.MaxUint32}[r.IntN(4)])
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64([]int64{0, -1, 1e12, math.MaxInt64, math.MinInt64}[r.IntN(5)])
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64([]uint64{0, 9, math.MaxUint64}[r.IntN(3)])
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(floats[r.IntN(len(floats))]))
	case protoreflect.DoubleKind:
		if r.IntN(2) == 0 {
			return protoreflect.ValueOfFloat64(r.Float64())
		}
		return protoreflect.ValueOfFloat64(floats[r.IntN(len(floats))])
	case protoreflect.EnumKind:
		vs := fd.Enum().Values()
		if r.IntN(5) == 0 {
			return protoreflect.ValueOfEnum(protoreflect.EnumNumber(vs.Len() + 40)) // unknown: a number
		}
		return protoreflect.ValueOfEnum(vs.Get(r.IntN(vs.Len())).Number())
	}
	panic("no scalar for " + fd.Kind().String())
}

var floats = []float64{0, math.Copysign(0, -1), 0.8, 1, -2.5, 1e-6, 9.99e-7, 1e-7, 1.5e-300, 1e20, 1e21, 1.2345e22,
	math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1), math.Inf(-1), 0.1 + 0.2}

// TestSizer_Size: the Sizer's size of every hearth.v1 message, filled at
// random, is the length of its JSON as the transports write it, and the
// Sizer fails exactly where the marshal does. The Sizer computes most
// sizes without marshaling (jsonSize): a size one byte off would pack a
// reply over its budget or report wrong estimated_tokens.
func TestSizer_Size(t *testing.T) {
	t.Parallel()
	sz := sizer(t)
	r := rand.New(rand.NewPCG(21, 22))
	var types []protoreflect.MessageType
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		if mt.Descriptor().ParentFile().Package() == "hearth.v1" {
			types = append(types, mt)
		}
		return true
	})
	if len(types) < 20 {
		t.Fatalf("%d hearth.v1 messages, want them all", len(types))
	}
	for _, mt := range types {
		for iter := range 60 {
			m := mt.New()
			fill(r, m, 0)
			check(t, sz, m.Interface(), mt.Descriptor().FullName(), iter)
		}
	}
	// The probes' own kinds, at random too.
	for iter := range 300 {
		rec := record(r)
		rec.Topics = []string{"a", nasty(r, 5)}[:r.IntN(3)]
		check(t, sz, rec, "record", iter)
	}
}

func check(t *testing.T, sz *budget.Sizer, m proto.Message, name protoreflect.FullName, iter int) {
	t.Helper()
	b, merr := gateway.MarshalResult(m)
	n, err := sz.Size(m)
	if (merr == nil) != (err == nil) || merr == nil && n != len(b) {
		t.Fatalf("%s/%d: Size %d, %v; marshal %d bytes, %v\n%s", name, iter, n, err, len(b), merr, b)
	}
}

// TestSizer_SizesWithoutMarshal: over the transports' marshal function a
// timeline's records are sized without marshaling one (the point of
// jsonSize); over marshal functions of other forms the Sizer marshals and
// its sizes are still theirs.
func TestSizer_SizesWithoutMarshal(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(23, 24))
	items := make([]*hearthv1.Record, 12)
	for i := range items {
		items[i] = record(r)
	}
	var whole, item int
	sz := countingSizer(t, gateway.MarshalResult, &whole, &item)
	resp := &hearthv1.TimelineResponse{}
	if _, err := budget.Pack(sz, resp, resp.SetRecords, items, budget.Options{MaxBytes: 8000}); err != nil {
		t.Fatal(err)
	}
	if item != 0 || whole != 0 {
		t.Errorf("marshaled %d records and %d whole responses to pack, want none", item, whole)
	}
	for _, o := range []protojson.MarshalOptions{
		{UseProtoNames: true},                        // no default values
		{EmitDefaultValues: true},                    // JSON names
		{UseProtoNames: true, EmitUnpopulated: true}, // nulls
		{UseProtoNames: true, EmitDefaultValues: true, UseEnumNumbers: true},
		{UseProtoNames: true, EmitDefaultValues: true, Multiline: true},
	} {
		item = 0
		sz := countingSizer(t, o.Marshal, &whole, &item)
		for _, rec := range items {
			b, err := o.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			if n, err := sz.Size(rec); err != nil || n != len(b) {
				t.Errorf("%+v: Size %d, %v; marshal %d bytes", o, n, err, len(b))
			}
		}
		if item != len(items) {
			t.Errorf("%+v: marshaled %d records to size %d, want each", o, item, len(items))
		}
	}
}

// BenchmarkSizer_Size sizes a record of about a kilobyte, as the timeline
// does each record it considers, against marshaling it.
func BenchmarkSizer_Size(b *testing.B) {
	r := rand.New(rand.NewPCG(25, 26))
	rec := record(r)
	rec.Content = strings.Repeat("words of a note ", 64)
	sz := sizer(b)
	b.Run("Size", func(b *testing.B) {
		for b.Loop() {
			if _, err := sz.Size(rec); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("marshal", func(b *testing.B) {
		for b.Loop() {
			if _, err := gateway.MarshalResult(rec); err != nil {
				b.Fatal(err)
			}
		}
	})
}
