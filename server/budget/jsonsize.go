package budget

import (
	"math"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// jsonSize returns the length of the JSON protojson writes for m in its
// compact form with proto names and default values (the transports' form,
// gateway.MarshalResult), computed from m without writing it: sizing an
// item this way costs a small part of marshaling it. sep is what protojson
// puts between two fields or list elements (a comma, and in some builds a
// space).
//
// It reports false for what it does not size — maps, groups, messages that
// may hold extensions, well-known types but Timestamp, invalid UTF-8, a
// timestamp out of range — and the caller marshals instead: the errors of
// a marshal stay the marshal's. NewSizer checks it against the marshal
// function it is given and uses it only when the two agree.
func jsonSize(m protoreflect.Message, sep int) (int, bool) {
	d := m.Descriptor()
	if d.FullName() == "google.protobuf.Timestamp" {
		return timestampSize(m)
	}
	if d.ExtensionRanges().Len() > 0 || wellKnown[d.FullName()] {
		return 0, false
	}
	n, count := 2, 0 // the braces; fields
	fields := d.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		// protojson with EmitDefaultValues writes every field without
		// presence, and a field with presence (a oneof's, a message, a
		// proto3 optional) only when it is set.
		if (fd.HasPresence() || fd.ContainingOneof() != nil) && !m.Has(fd) {
			continue
		}
		if fd.IsMap() || fd.Kind() == protoreflect.GroupKind {
			return 0, false
		}
		name, ok := stringSize(fd.TextName())
		if !ok {
			return 0, false
		}
		n += name + 1 // "name":
		v := m.Get(fd)
		if fd.IsList() {
			l := v.List()
			n += 2 // [ ]
			for j := range l.Len() {
				k, ok := valueSize(fd, l.Get(j), sep)
				if !ok {
					return 0, false
				}
				n += k
			}
			if l.Len() > 1 {
				n += (l.Len() - 1) * sep
			}
		} else {
			k, ok := valueSize(fd, v, sep)
			if !ok {
				return 0, false
			}
			n += k
		}
		count++
	}
	if count > 1 {
		n += (count - 1) * sep
	}
	return n, true
}

// wellKnown are the messages protojson writes in a form of their own,
// besides Timestamp, which jsonSize sizes.
var wellKnown = map[protoreflect.FullName]bool{
	"google.protobuf.Any": true, "google.protobuf.Duration": true, "google.protobuf.Empty": true,
	"google.protobuf.FieldMask": true, "google.protobuf.Struct": true, "google.protobuf.Value": true,
	"google.protobuf.ListValue": true,
	"google.protobuf.BoolValue": true, "google.protobuf.BytesValue": true, "google.protobuf.StringValue": true,
	"google.protobuf.DoubleValue": true, "google.protobuf.FloatValue": true,
	"google.protobuf.Int32Value": true, "google.protobuf.Int64Value": true,
	"google.protobuf.UInt32Value": true, "google.protobuf.UInt64Value": true,
}

// valueSize is the size of one value of fd (a list's element for a list).
func valueSize(fd protoreflect.FieldDescriptor, v protoreflect.Value, sep int) (int, bool) {
	var buf [40]byte
	switch fd.Kind() {
	case protoreflect.BoolKind:
		if v.Bool() {
			return 4, true
		}
		return 5, true
	case protoreflect.StringKind:
		return stringSize(v.String())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return len(strconv.AppendInt(buf[:0], v.Int(), 10)), true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return len(strconv.AppendUint(buf[:0], v.Uint(), 10)), true
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return len(strconv.AppendInt(buf[:0], v.Int(), 10)) + 2, true // a JSON string
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return len(strconv.AppendUint(buf[:0], v.Uint(), 10)) + 2, true
	case protoreflect.FloatKind:
		return len(appendFloat(buf[:0], v.Float(), 32)), true
	case protoreflect.DoubleKind:
		return len(appendFloat(buf[:0], v.Float(), 64)), true
	case protoreflect.BytesKind:
		return (len(v.Bytes())+2)/3*4 + 2, true // standard base64, padded, quoted
	case protoreflect.EnumKind:
		if fd.Enum().FullName() == "google.protobuf.NullValue" {
			return 4, true
		}
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return stringSize(string(ev.Name()))
		}
		return len(strconv.AppendInt(buf[:0], int64(v.Enum()), 10)), true
	case protoreflect.MessageKind:
		return jsonSize(v.Message(), sep)
	}
	return 0, false
}

// stringSize is the size of s as a JSON string as protojson escapes it:
// quotes, then \" \\ \b \f \n \r \t for those, \u00XX for the other
// control characters, every other character as it is.
func stringSize(s string) (int, bool) {
	n := len(s) + 2
	var high byte
	i := 0
	// Eight bytes at a time while none needs a look of its own (a control
	// character, a quote, a backslash or a byte of a multi-byte character):
	// most text has none.
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if (w-ones*' ')&^w&highs|zero(w^(ones*'"'))|zero(w^(ones*'\\'))|w&highs != 0 {
			for _, c := range []byte(s[i : i+8]) {
				n += int(escaped[c])
				high |= c
			}
		}
	}
	for ; i < len(s); i++ {
		n += int(escaped[s[i]])
		high |= s[i]
	}
	if high >= utf8.RuneSelf && !utf8.ValidString(s) {
		return 0, false // protojson refuses it: let the marshal say so
	}
	return n, true
}

// ones and highs are a byte's lowest and highest bit in each byte of a
// word; zero(w) is not 0 exactly when a byte of w is 0.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

func zero(w uint64) uint64 { return (w - ones) &^ w & highs }

// escaped is what escaping adds to each byte of a string.
var escaped = func() (t [256]uint8) {
	for c := range ' ' {
		t[c] = 5 // \u00XX
	}
	for _, c := range "\"\\\b\f\n\r\t" {
		t[c] = 1
	}
	return t
}()

// The range of a Timestamp protojson writes (years 1 to 9999).
const (
	minTimestampSeconds = -62135596800
	maxTimestampSeconds = 253402300799
)

// timestampSize is the size of a Timestamp as protojson writes it: RFC 3339
// in UTC with 0, 3, 6 or 9 fractional digits, quoted.
func timestampSize(m protoreflect.Message) (int, bool) {
	fields := m.Descriptor().Fields()
	secs := m.Get(fields.ByNumber(1)).Int()
	nanos := m.Get(fields.ByNumber(2)).Int()
	if secs < minTimestampSeconds || secs > maxTimestampSeconds || nanos < 0 || nanos >= 1e9 {
		return 0, false
	}
	n := len(`"2006-01-02T15:04:05Z"`)
	switch {
	case nanos == 0:
	case nanos%1e6 == 0:
		n += 4
	case nanos%1e3 == 0:
		n += 7
	default:
		n += 10
	}
	return n, true
}

// appendFloat formats n as protojson does (its internal/encoding/json):
// NaN and the infinities as strings, otherwise the shortest form, in
// exponent form outside [1e-6, 1e21) with a one-digit exponent unpadded.
func appendFloat(out []byte, n float64, bitSize int) []byte {
	switch {
	case math.IsNaN(n):
		return append(out, `"NaN"`...)
	case math.IsInf(n, +1):
		return append(out, `"Infinity"`...)
	case math.IsInf(n, -1):
		return append(out, `"-Infinity"`...)
	}
	fmt := byte('f')
	if abs := math.Abs(n); abs != 0 {
		if bitSize == 64 && (abs < 1e-6 || abs >= 1e21) ||
			bitSize == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			fmt = 'e'
		}
	}
	out = strconv.AppendFloat(out, n, fmt, -1, bitSize)
	if fmt == 'e' {
		n := len(out)
		if n >= 4 && out[n-4] == 'e' && out[n-3] == '-' && out[n-2] == '0' {
			out[n-2] = out[n-1]
			out = out[:n-1]
		}
	}
	return out
}
