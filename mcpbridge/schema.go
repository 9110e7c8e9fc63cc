package mcpbridge

import (
	"bytes"
	"encoding/json"

	"google.golang.org/protobuf/reflect/protoreflect"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
)

// object is a JSON object that keeps its keys in the order given, so that a
// schema lists properties in field order (the proto puts essentials first)
// rather than alphabetically.
type object []member

type member struct {
	key   string
	value any
}

// MarshalJSON writes the members in order.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// inputSchema derives a tool's JSON Schema from its request message: proto
// field names (as the REST body and gateway.DecodeRequest use them), JSON
// types as protojson reads them, and descriptions from the proto comments.
// No property is required: proto3 has no required fields, and the server
// validates and names what is missing.
func inputSchema(md protoreflect.MessageDescriptor) (json.RawMessage, error) {
	return json.Marshal(messageSchema(md, nil))
}

// messageSchema describes a message as a closed object. stack holds the
// messages being described, so that a recursive message ends in a plain
// object instead of recursing forever.
func messageSchema(md protoreflect.MessageDescriptor, stack []protoreflect.FullName) object {
	for _, name := range stack {
		if name == md.FullName() {
			return object{{"type", "object"}}
		}
	}
	stack = append(stack, md.FullName())
	props := object{}
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		props = append(props, member{string(fd.Name()), fieldSchema(fd, stack)})
	}
	return object{
		{"type", "object"},
		{"properties", props},
		{"additionalProperties", false},
	}
}

// fieldSchema describes one field, with its proto comment (or, for a
// message field without one, its message's comment) as the description.
func fieldSchema(fd protoreflect.FieldDescriptor, stack []protoreflect.FullName) object {
	var s object
	switch {
	case fd.IsMap():
		s = object{{"type", "object"}, {"additionalProperties", singularSchema(fd.MapValue(), stack)}}
	case fd.IsList():
		s = object{{"type", "array"}, {"items", singularSchema(fd, stack)}}
	default:
		s = singularSchema(fd, stack)
	}
	desc := hearthv1.Docs[string(fd.FullName())]
	if desc == "" && fd.Message() != nil && !fd.IsMap() {
		desc = hearthv1.Docs[string(fd.Message().FullName())]
	}
	switch {
	case desc == "":
	case len(s) == 0:
		s = object{{"description", desc}}
	default:
		// The description goes right after the type, before any nested
		// properties, where a reader of the schema looks first.
		s = append(s[:1:1], append(object{{"description", desc}}, s[1:]...)...)
	}
	return s
}

// singularSchema describes one value of fd's type.
func singularSchema(fd protoreflect.FieldDescriptor, stack []protoreflect.FullName) object {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return object{{"type", "boolean"}}
	case protoreflect.StringKind:
		return object{{"type", "string"}}
	case protoreflect.BytesKind:
		return object{{"type", "string"}, {"contentEncoding", "base64"}}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return object{{"type", "integer"}}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return object{{"type", "integer"}, {"minimum", 0}}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return object{{"type", "number"}}
	case protoreflect.EnumKind:
		values := fd.Enum().Values()
		names := make([]string, values.Len())
		for i := range names {
			names[i] = string(values.Get(i).Name())
		}
		return object{{"type", "string"}, {"enum", names}}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return wellKnownSchema(fd.Message(), stack)
	}
	return object{}
}

// wellKnownSchema describes a message value, giving the well-known types the
// JSON form protojson uses for them.
func wellKnownSchema(md protoreflect.MessageDescriptor, stack []protoreflect.FullName) object {
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		return object{{"type", "string"}, {"format", "date-time"}}
	case "google.protobuf.Duration":
		return object{{"type", "string"}, {"pattern", `^-?[0-9]+(\.[0-9]{1,9})?s$`}}
	case "google.protobuf.ListValue":
		// Hearth uses ListValue where an explicit [] must differ from absent
		// (RecordChanges.topics); its items are strings.
		return object{{"type", "array"}, {"items", object{{"type", "string"}}}}
	case "google.protobuf.Struct":
		return object{{"type", "object"}}
	case "google.protobuf.Value":
		return object{}
	case "google.protobuf.FieldMask":
		return object{{"type", "string"}}
	case "google.protobuf.Empty":
		return object{{"type", "object"}, {"additionalProperties", false}}
	case "google.protobuf.Any":
		return object{{"type", "object"}}
	case "google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue",
		"google.protobuf.Int32Value", "google.protobuf.UInt32Value", "google.protobuf.Int64Value",
		"google.protobuf.UInt64Value", "google.protobuf.FloatValue", "google.protobuf.DoubleValue":
		return singularSchema(md.Fields().ByName("value"), stack)
	}
	return messageSchema(md, stack)
}
