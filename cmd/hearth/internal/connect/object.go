package connect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Object is a JSON object that keeps its keys in order and its values as
// they were written, so merging into a user's settings file changes only
// the keys it means to.
type Object struct {
	keys   []string
	values map[string]json.RawMessage
}

// ParseObject reads a JSON object; empty input is an empty object.
func ParseObject(data []byte) (*Object, error) {
	o := &Object{}
	if len(bytes.TrimSpace(data)) == 0 {
		return o, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errors.New("not a JSON object")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		o.Set(key, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("text after the JSON object")
	}
	return o, nil
}

// Get returns a key's value, or nil.
func (o *Object) Get(key string) json.RawMessage { return o.values[key] }

// Has reports whether key is set.
func (o *Object) Has(key string) bool { _, ok := o.values[key]; return ok }

// Set sets key to v, in place when it exists, else last.
func (o *Object) Set(key string, v json.RawMessage) {
	if o.values == nil {
		o.values = map[string]json.RawMessage{}
	}
	if _, ok := o.values[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.values[key] = v
}

// Delete removes key.
func (o *Object) Delete(key string) {
	if _, ok := o.values[key]; !ok {
		return
	}
	delete(o.values, key)
	for i, k := range o.keys {
		if k == key {
			o.keys = append(o.keys[:i:i], o.keys[i+1:]...)
			break
		}
	}
}

// Keys returns the keys in order.
func (o *Object) Keys() []string { return append([]string(nil), o.keys...) }

// Compact returns the object as compact JSON, keys in order.
func (o *Object) Compact() []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		var v bytes.Buffer
		if err := json.Compact(&v, o.values[k]); err != nil {
			panic(fmt.Sprintf("connect: invalid JSON under %q: %v", k, err))
		}
		b.Write(v.Bytes())
	}
	b.WriteByte('}')
	return b.Bytes()
}

// Indent returns the object indented by two spaces, keys in order.
func (o *Object) Indent() string {
	var b bytes.Buffer
	if err := json.Indent(&b, o.Compact(), "", "  "); err != nil {
		panic(err)
	}
	return b.String()
}

// marshal is json.Marshal without HTML escaping: settings files are read by
// people, and '&' in a path should read as '&'.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
