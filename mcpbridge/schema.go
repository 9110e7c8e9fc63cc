package mcpbridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-openapiv2/options"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
)

// maxBytesExtension is the OpenAPI extension by which a field bounds a
// string in bytes of UTF-8 (JSON Schema's maxLength counts characters);
// maxLinesExtension bounds a string of lines in lines.
const (
	maxBytesExtension = "x-max-bytes"
	maxLinesExtension = "x-max-lines"
)

// notOfferedExtension is the OpenAPI extension by which a field that only
// hooks, scripts or the eval set (recall, ranking, a session id, a git
// remote where a namespace does) is left out of the MCP schema: the server
// still accepts it, but an agent is not sent its description.
const notOfferedExtension = "x-mcp-not-offered"

// Brief is the part of a proto comment an MCP client is sent: its first
// paragraph, which holds the essentials (protoc-gen-hearth keeps a
// comment's paragraphs apart by a blank line).
func Brief(doc string) string {
	first, _, _ := strings.Cut(doc, "\n\n")
	return first
}

// offered reports whether the schema offers fd: not deprecated (accepted
// and ignored for compatibility) nor marked notOfferedExtension.
func offered(fd protoreflect.FieldDescriptor) bool {
	if fo, ok := fd.Options().(*descriptorpb.FieldOptions); ok && fo.GetDeprecated() {
		return false
	}
	return !argOf(fd).GetExtensions()[notOfferedExtension].GetBoolValue()
}

// object is a JSON object that keeps its keys in the order given, so that a
// schema lists properties in field order (the proto puts essentials first)
// rather than alphabetically.
type object []member

type member struct {
	key   string
	value any
}

// set returns o with key set to value: replaced where o has it, appended
// otherwise.
func (o object) set(key string, value any) object {
	for i := range o {
		if o[i].key == key {
			o[i].value = value
			return o
		}
	}
	return append(o, member{key, value})
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
// types as protojson reads them, descriptions from the proto comments, and
// the constraints each field's openapiv2_field option declares — required,
// lengths, item counts, bounds, patterns, closed sets, defaults — which are
// the very values the server's validators read, so the schema promises what
// the server enforces. A limit in bytes, which JSON Schema cannot state, is
// said in the description. Deprecated fields (accepted and ignored for
// compatibility) and those marked notOfferedExtension are not offered.
// Descriptions are the comments' first paragraphs (Brief).
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
	var required []string
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !offered(fd) {
			continue
		}
		props = append(props, member{string(fd.Name()), fieldSchema(fd, stack)})
		required = append(required, argOf(fd).GetRequired()...)
	}
	s := object{
		{"type", "object"},
		{"properties", props},
	}
	if len(required) > 0 {
		s = append(s, member{"required", required})
	}
	return append(s, member{"additionalProperties", false})
}

// argOf returns fd's openapiv2_field option, or nil.
func argOf(fd protoreflect.FieldDescriptor) *options.JSONSchema {
	o, _ := proto.GetExtension(fd.Options(), options.E_Openapiv2Field).(*options.JSONSchema)
	return o
}

// constrain adds the constraints of fd's option to s, the schema of one
// value (for a list, of each item), and returns the list's own constraints
// and a sentence for the description.
func constrain(fd protoreflect.FieldDescriptor, s object) (value, list object, note string) {
	o := argOf(fd)
	if o == nil {
		return s, nil, ""
	}
	if o.GetMinLength() > 0 {
		s = s.set("minLength", o.GetMinLength())
	}
	if o.GetMaxLength() > 0 {
		s = s.set("maxLength", o.GetMaxLength())
	}
	if o.GetPattern() != "" {
		s = s.set("pattern", o.GetPattern())
	}
	if len(o.GetEnum()) > 0 {
		s = s.set("enum", o.GetEnum())
	}
	switch {
	case o.GetExclusiveMinimum():
		s = s.set("exclusiveMinimum", o.GetMinimum())
	case o.GetMinimum() != 0:
		s = s.set("minimum", o.GetMinimum())
	}
	switch {
	case o.GetExclusiveMaximum():
		s = s.set("exclusiveMaximum", o.GetMaximum())
	case o.GetMaximum() != 0:
		s = s.set("maximum", o.GetMaximum())
	}
	if d := o.GetDefault(); d != "" {
		if n, err := strconv.ParseFloat(d, 64); err == nil && fd.Kind() != protoreflect.StringKind {
			s = s.set("default", n)
		} else {
			s = s.set("default", d)
		}
	}
	if o.GetMinItems() > 0 {
		list = append(list, member{"minItems", o.GetMinItems()})
	}
	if o.GetMaxItems() > 0 {
		list = append(list, member{"maxItems", o.GetMaxItems()})
	}
	if n := o.GetExtensions()[maxBytesExtension].GetNumberValue(); n > 0 {
		note = fmt.Sprintf("At most %d bytes of UTF-8.", int64(n))
	}
	if n := o.GetExtensions()[maxLinesExtension].GetNumberValue(); n > 0 {
		note = strings.TrimSpace(note + fmt.Sprintf(" At most %d lines.", int64(n)))
	}
	return s, list, note
}

// fieldSchema describes one field, with its proto comment (or, for a
// message field without one, its message's comment) as the description.
func fieldSchema(fd protoreflect.FieldDescriptor, stack []protoreflect.FullName) object {
	var s object
	var note string
	switch {
	case fd.IsMap():
		s = object{{"type", "object"}, {"additionalProperties", singularSchema(fd.MapValue(), stack)}}
	case fd.IsList() || isListValue(fd):
		item := singularSchema(fd, stack)
		if isListValue(fd) {
			item = object{{"type", "string"}}
		}
		var list object
		item, list, note = constrain(fd, item)
		s = append(object{{"type", "array"}, {"items", item}}, list...)
	default:
		s, _, note = constrain(fd, singularSchema(fd, stack))
	}
	desc := Brief(hearthv1.Docs[string(fd.FullName())])
	if desc == "" && fd.Message() != nil && !fd.IsMap() {
		desc = Brief(hearthv1.Docs[string(fd.Message().FullName())])
	}
	switch {
	case note == "":
	case desc == "":
		desc = note
	default:
		desc += " " + note
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

// isListValue reports whether fd is a google.protobuf.ListValue, which
// Hearth uses for a list whose [] must differ from absent.
func isListValue(fd protoreflect.FieldDescriptor) bool {
	return !fd.IsList() && fd.Message() != nil && fd.Message().FullName() == "google.protobuf.ListValue"
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
