package modeltest

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"math"
	"strconv"
)

// Vector returns the unit-length vector of dim values the test servers
// give text: deterministic, so a test can compute what the client should
// have received.
func Vector(text string, dim int) []float32 {
	sum := sha256.Sum256([]byte(text))
	state := binary.LittleEndian.Uint64(sum[:8]) ^ binary.LittleEndian.Uint64(sum[8:16])
	v := make([]float32, dim)
	var norm float64
	for i := range v {
		// splitmix64
		state += 0x9e3779b97f4a7c15
		z := state
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		x := float64(z>>11)/float64(1<<53)*2 - 1
		v[i] = float32(x)
		norm += x * x
	}
	if norm == 0 {
		return v
	}
	inv := 1 / math.Sqrt(norm)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
	return v
}

// appendVectors appends the JSON array of the vectors of inputs.
func appendVectors(b []byte, inputs []string, dim int, act Action) []byte {
	b = append(b, '[')
	for i, in := range inputs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendVector(b, in, dim, act)
	}
	return append(b, ']')
}

func appendVector(b []byte, text string, dim int, act Action) []byte {
	scale := act.Scale
	if scale == 0 {
		scale = 1
	}
	b = append(b, '[')
	for j, x := range Vector(text, dim) {
		if j > 0 {
			b = append(b, ',')
		}
		if j == 0 && act.Null {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, float64(x)*scale, 'g', -1, 32)
	}
	return append(b, ']')
}

// chatContent is a chat reply's content: the scripted one, or a minimal
// instance of the requested schema ("{}" when there is none).
func chatContent(act Action, c Chat) string {
	if act.Content != "" {
		return act.Content
	}
	if act.Reply != nil {
		return act.Reply(c)
	}
	if len(c.Schema) == 0 {
		return "{}"
	}
	var schema any
	if json.Unmarshal(c.Schema, &schema) != nil {
		return "{}"
	}
	b, err := json.Marshal(Instance(schema))
	if err != nil {
		return "{}"
	}
	return string(b)
}

// Instance returns a minimal value that satisfies a simple JSON schema:
// const or the first enum value; objects with their required properties;
// arrays of minItems items; "" (or minLength x's), the minimum or 0, false,
// null; the first branch of anyOf/oneOf and the first of a type list.
func Instance(schema any) any {
	m, ok := schema.(map[string]any)
	if !ok {
		return nil
	}
	if c, ok := m["const"]; ok {
		return c
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := m[k].([]any); ok && len(alts) > 0 {
			return Instance(alts[0])
		}
	}
	typ, _ := m["type"].(string)
	if list, ok := m["type"].([]any); ok && len(list) > 0 {
		typ, _ = list[0].(string)
	}
	switch typ {
	case "object":
		out := map[string]any{}
		props, _ := m["properties"].(map[string]any)
		req, _ := m["required"].([]any)
		for _, r := range req {
			name, _ := r.(string)
			out[name] = Instance(props[name])
		}
		return out
	case "array":
		n, _ := m["minItems"].(float64)
		out := []any{}
		for range int(n) {
			out = append(out, Instance(m["items"]))
		}
		return out
	case "string":
		n, _ := m["minLength"].(float64)
		s := ""
		for range int(n) {
			s += "x"
		}
		return s
	case "integer", "number":
		if min, ok := m["minimum"].(float64); ok {
			return min
		}
		return 0
	case "boolean":
		return false
	}
	return nil
}
