package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
)

// marshalOptions is the one JSON form of results and errors. Proto field
// names (snake_case) are part of the API (docs/design.md §18b). EmitDefaultValues
// writes zero scalars and empty lists, so a script always finds a key, but
// unlike EmitUnpopulated it leaves unset proto3 `optional` fields (such as a
// hit's cosine) and unset messages absent, so absence keeps its meaning.
//
// protojson randomises its whitespace per build to stop byte comparisons
// across builds; within one binary the output is stable, which is all REST
// and MCP parity needs.
var marshalOptions = protojson.MarshalOptions{
	UseProtoNames:     true,
	EmitDefaultValues: true,
}

// unmarshalOptions rejects unknown fields: a misspelt argument is an error
// naming it, not a silently ignored value.
var unmarshalOptions = protojson.UnmarshalOptions{
	DiscardUnknown: false,
}

// MarshalResult renders a successful call's response as JSON: the REST body
// and the text of the MCP tool result, byte for byte.
func MarshalResult(m proto.Message) ([]byte, error) {
	return marshalOptions.Marshal(m)
}

// DecodeRequest decodes a REST body or MCP tool arguments into m, which it
// resets first. An empty body and JSON null decode to the empty request.
//
// A failure is an INVALID_ARGUMENT status whose hearth.v1.ErrorDetail names
// the field at fault (proto names with dots and [index], e.g.
// changes.title or anchors[2]). Messages name fields but never repeat the
// caller's values, which may be secrets the screen exists to keep out.
func DecodeRequest(data []byte, m proto.Message) error {
	proto.Reset(m)
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return nil
	}
	if err := unmarshalOptions.Unmarshal(trimmed, m); err == nil {
		return nil
	}
	proto.Reset(m)
	field, msg := explainDecodeError(trimmed, m.ProtoReflect().Descriptor())
	return invalidArgument(msg, field)
}

// invalidArgument returns an INVALID_ARGUMENT status carrying field in its
// ErrorDetail.
func invalidArgument(msg, field string) error {
	st := status.New(codes.InvalidArgument, msg)
	if field == "" {
		return st.Err()
	}
	withDetail, err := st.WithDetails(&hearthv1.ErrorDetail{Field: field})
	if err != nil {
		return st.Err()
	}
	return withDetail.Err()
}

// explainDecodeError finds why protojson refused data for md. protojson's own
// messages are unsuitable: they echo values, use JSON (camelCase) names, give
// no path into nested messages, and vary by build. Instead the object is
// walked field by field, and each field is tried alone against protojson, so
// the rules stay protojson's and only the report is ours.
func explainDecodeError(data []byte, md protoreflect.MessageDescriptor) (field, msg string) {
	if !json.Valid(data) {
		return "", "request is not valid JSON"
	}
	if data[0] != '{' {
		return "", "request must be a JSON object"
	}
	if field, msg, ok := walkObject(data, md, ""); ok {
		return field, msg
	}
	return "", "invalid request"
}

// walkObject reports the first field of the JSON object raw that protojson
// refuses for md, in the order the fields appear.
func walkObject(raw []byte, md protoreflect.MessageDescriptor, prefix string) (field, msg string, found bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return prefix, fmt.Sprintf("invalid value for field %q: want a JSON object", prefix), true
	}
	seen := make(map[protoreflect.FieldNumber]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", "", false
		}
		key, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return "", "", false
		}
		fd := md.Fields().ByJSONName(key)
		if fd == nil {
			fd = md.Fields().ByName(protoreflect.Name(key))
		}
		if fd == nil {
			path := join(prefix, key)
			return path, fmt.Sprintf("unknown field %q", path), true
		}
		path := join(prefix, string(fd.Name()))
		if seen[fd.Number()] {
			return path, fmt.Sprintf("duplicate field %q", path), true
		}
		seen[fd.Number()] = true
		if probe(md, key, value) == nil {
			continue
		}
		if field, msg, ok := walkValue(fd, value, path); ok {
			return field, msg, true
		}
		if fd.Message() != nil && !isWellKnown(fd.Message()) && !fd.IsList() && !fd.IsMap() &&
			bytes.HasPrefix(bytes.TrimSpace(value), []byte("{")) {
			// An object whose fields each pass but which fails as a whole.
			return path, fmt.Sprintf("invalid value for field %q", path), true
		}
		return path, fmt.Sprintf("invalid value for field %q: want %s", path, want(fd)), true
	}
	// Every field passed alone: the object fails as a whole (a oneof set
	// twice, say). Let the caller report it without a field.
	return "", "", false
}

// walkValue looks inside a refused value of a message-typed field for the
// innermost field at fault.
func walkValue(fd protoreflect.FieldDescriptor, value json.RawMessage, path string) (field, msg string, found bool) {
	sub := fd.Message()
	if sub == nil || isWellKnown(sub) {
		return "", "", false
	}
	if fd.IsMap() {
		sub = fd.MapValue().Message()
		if sub == nil || isWellKnown(sub) {
			return "", "", false
		}
		var entries map[string]json.RawMessage
		if json.Unmarshal(value, &entries) != nil {
			return "", "", false
		}
		// Map order is random, so look at keys sorted for a stable report.
		for _, k := range slices.Sorted(maps.Keys(entries)) {
			if field, msg, ok := walkMessage(sub, entries[k], fmt.Sprintf("%s[%q]", path, k)); ok {
				return field, msg, true
			}
		}
		return "", "", false
	}
	if fd.IsList() {
		var elems []json.RawMessage
		if json.Unmarshal(value, &elems) != nil {
			return "", "", false
		}
		for i, elem := range elems {
			if field, msg, ok := walkMessage(sub, elem, fmt.Sprintf("%s[%d]", path, i)); ok {
				return field, msg, true
			}
		}
		return "", "", false
	}
	return walkMessage(sub, value, path)
}

// walkMessage explains a refused message value, treating JSON null as valid.
func walkMessage(md protoreflect.MessageDescriptor, value json.RawMessage, path string) (field, msg string, found bool) {
	if string(bytes.TrimSpace(value)) == "null" {
		return "", "", false
	}
	return walkObject(value, md, path)
}

// probe decodes a single field, as written by the caller, into an empty md.
func probe(md protoreflect.MessageDescriptor, key string, value json.RawMessage) error {
	name, err := json.Marshal(key)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	b.WriteByte('{')
	b.Write(name)
	b.WriteByte(':')
	b.Write(value)
	b.WriteByte('}')
	return unmarshalOptions.Unmarshal(b.Bytes(), dynamicpb.NewMessage(md))
}

// want describes the JSON a field accepts, for error messages.
func want(fd protoreflect.FieldDescriptor) string {
	switch {
	case fd.IsMap():
		return "a JSON object, each value " + wantSingular(fd.MapValue())
	case fd.IsList():
		return "a JSON array, each item " + wantSingular(fd)
	}
	return wantSingular(fd)
}

func wantSingular(fd protoreflect.FieldDescriptor) string {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return "true or false"
	case protoreflect.StringKind:
		return "a string"
	case protoreflect.BytesKind:
		return "base64 text"
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return "a 32-bit integer"
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return "a non-negative 32-bit integer"
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return "a 64-bit integer"
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return "a non-negative 64-bit integer"
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return "a number"
	case protoreflect.EnumKind:
		values := fd.Enum().Values()
		names := make([]string, values.Len())
		for i := range names {
			names[i] = string(values.Get(i).Name())
		}
		return "one of " + strings.Join(names, ", ")
	case protoreflect.MessageKind, protoreflect.GroupKind:
		switch fd.Message().FullName() {
		case "google.protobuf.Timestamp":
			return "an RFC 3339 time such as 2025-01-02T15:04:05Z"
		case "google.protobuf.Duration":
			return `a duration such as "1.5s"`
		case "google.protobuf.ListValue":
			return "a JSON array"
		case "google.protobuf.Struct":
			return "a JSON object"
		case "google.protobuf.FieldMask":
			return "a comma-separated list of field names"
		}
		if isWellKnown(fd.Message()) {
			return "a valid " + string(fd.Message().Name())
		}
		return "a JSON object"
	}
	return "a valid value"
}

// isWellKnown reports whether md has a special JSON form in protojson, so
// that it is probed as a whole instead of walked field by field.
func isWellKnown(md protoreflect.MessageDescriptor) bool {
	return md.ParentFile().Package() == "google.protobuf"
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}
