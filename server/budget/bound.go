package budget

import (
	"math"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Fits reports whether m's JSON, as the transports marshal it, is at most
// limit bytes, and gives its size when it is not. It marshals m only when
// it must: a message whose Bound is within limit fits whatever its exact
// size. A message refused is always measured.
func (s *Sizer) Fits(m proto.Message, limit int) (fits bool, size int, err error) {
	if Bound(m) <= limit {
		return true, 0, nil
	}
	n, err := s.Size(m)
	if err != nil {
		return false, 0, err
	}
	return n <= limit, n, nil
}

// unbounded stands for a message whose JSON Bound cannot bound (an Any
// carries a message protojson writes out field by field).
const unbounded = math.MaxInt / 4

// Bound returns an upper bound of the size of m's JSON in any protojson
// form: compact or indented, with or without default values. It counts
// every field of m's type, set or not, by its longer name, and each value
// at its longest: a string with every character escaped that JSON may
// escape, bytes as base64, a number at 32 characters, a message at its own
// bound. It reads no more than the message it is given, so it costs a small
// part of a marshal.
func Bound(m proto.Message) int { return boundMessage(m.ProtoReflect(), 0) }

// boundField is what protojson writes around one field or list element of
// a message at depth besides its name and value: quotes, colon, comma, a
// line break and the indentation of an indented form.
func boundField(depth int) int { return 16 + 4*depth }

func boundMessage(m protoreflect.Message, depth int) int {
	d := m.Descriptor()
	if d.FullName() == "google.protobuf.Any" || depth > 32 {
		return unbounded
	}
	// n never passes unbounded, nor does what is added to it: no overflow.
	n := 2 + boundField(depth)
	add := func(k int) { n = min(n+k, unbounded) }
	fields := d.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		add(boundField(depth+1) + 2 + max(len(fd.Name()), len(fd.JSONName())))
		switch {
		case fd.IsList():
			l := m.Get(fd).List()
			add(2 + boundField(depth+1))
			for j := range l.Len() {
				add(boundField(depth + 2))
				add(boundValue(fd, l.Get(j), depth+1))
			}
		case fd.IsMap():
			add(2 + boundField(depth+1))
			m.Get(fd).Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
				add(boundField(depth+2) + boundString(k.String()))
				add(boundValue(fd.MapValue(), v, depth+1))
				return true
			})
		case fd.Message() != nil && !m.Has(fd):
			add(len("null"))
		default:
			add(boundValue(fd, m.Get(fd), depth))
		}
	}
	return n
}

func boundValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, depth int) int {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return boundString(v.String())
	case protoreflect.BytesKind:
		return 2 + 4*((len(v.Bytes())+2)/3)
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return boundMessage(v.Message(), depth+1)
	case protoreflect.EnumKind:
		n := 11 // a number with no name
		values := fd.Enum().Values()
		for i := range values.Len() {
			n = max(n, 2+len(values.Get(i).Name()))
		}
		return n
	case protoreflect.BoolKind:
		return len("false")
	default:
		// Integers (64-bit ones quoted) and floats (with an exponent, or
		// "NaN", "-Infinity") are shorter.
		return 32
	}
}

// boundString bounds a string's JSON: quoted, a control character or one
// of <, > and & at most six bytes (\u00XX), a quote or backslash two, and
// a character led by 0xE2 (U+2000 to U+2FFF, among them U+2028 and U+2029)
// at most six for its three. Invalid UTF-8, which protojson refuses, is
// left to the marshal.
func boundString(s string) int {
	if !utf8.ValidString(s) {
		return unbounded
	}
	n := 2
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c == '<', c == '>', c == '&':
			n += 6
		case c == '"', c == '\\':
			n += 2
		case c == 0xE2:
			n += 4
		default:
			n++
		}
	}
	return n
}
