package models

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema is the JSON schema a reply must satisfy. It is sent with the
// request (Ollama's format, OpenAI's response_format) and checked again on
// arrival, because servers have accepted schemas without enforcing them
// (shared/MODELS.md).
type Schema struct {
	name string
	raw  json.RawMessage
	sch  *jsonschema.Schema
}

var schemaName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// NewSchema compiles doc, a JSON schema (draft 2020-12 unless it names
// another in $schema), under name, which OpenAI's json_schema requires
// (1–64 of A–Z a–z 0–9 _ -). A schema may not load anything by $ref from
// outside itself.
func NewSchema(name string, doc []byte) (*Schema, error) {
	if !schemaName.MatchString(name) {
		return nil, fmt.Errorf("models: schema name %q: want 1-64 of A-Z a-z 0-9 _ -", name)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("models: schema %s: %w", name, err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("models: schema %s: not a JSON object", name)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{}) // no files, no network
	url := "mem:///" + name + ".json"
	if err := c.AddResource(url, v); err != nil {
		return nil, fmt.Errorf("models: schema %s: %w", name, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("models: schema %s: %w", name, err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, doc); err != nil {
		return nil, fmt.Errorf("models: schema %s: %w", name, err)
	}
	return &Schema{name: name, raw: compact.Bytes(), sch: sch}, nil
}

// MustSchema is NewSchema for schemas written in the code; it panics on an
// error.
func MustSchema(name, doc string) *Schema {
	s, err := NewSchema(name, []byte(doc))
	if err != nil {
		panic(err)
	}
	return s
}

// Name returns the schema's name.
func (s *Schema) Name() string { return s.name }

// JSON returns the schema document, compacted.
func (s *Schema) JSON() json.RawMessage { return s.raw }

// Check reports whether content is one JSON value that satisfies the
// schema. The error names where the reply went wrong and which keyword it
// broke, never the reply's text (a model may echo a secret).
func (s *Schema) Check(content []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(content))
	if err != nil {
		return errors.New("reply is not one JSON value")
	}
	if err := s.sch.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return fmt.Errorf("reply violates schema %s %s", s.name, where(ve))
		}
		return fmt.Errorf("reply violates schema %s", s.name)
	}
	return nil
}

// where describes the first leaf failure: its instance location and the
// keyword it broke.
func where(ve *jsonschema.ValidationError) string {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	loc := "/" + strings.Join(ve.InstanceLocation, "/")
	kw := ""
	if ve.ErrorKind != nil {
		if p := ve.ErrorKind.KeywordPath(); len(p) > 0 {
			kw = p[len(p)-1]
		}
	}
	if kw == "" {
		return "at " + loc
	}
	return "at " + loc + " (" + kw + ")"
}
