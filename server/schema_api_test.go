package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hearth-memory/hearth/server/servertest"
	"github.com/hearth-memory/hearth/storage"
)

// schemaProp is the part of a JSON Schema property the probes read.
type schemaProp struct {
	Type             string                `json:"type"`
	Description      string                `json:"description"`
	MinLength        *int                  `json:"minLength"`
	MaxLength        *int                  `json:"maxLength"`
	Pattern          string                `json:"pattern"`
	Enum             []string              `json:"enum"`
	Minimum          *float64              `json:"minimum"`
	Maximum          *float64              `json:"maximum"`
	ExclusiveMinimum *float64              `json:"exclusiveMinimum"`
	MinItems         *int                  `json:"minItems"`
	MaxItems         *int                  `json:"maxItems"`
	Items            *schemaProp           `json:"items"`
	Properties       map[string]schemaProp `json:"properties"`
	Required         []string              `json:"required"`
}

// mcpSchemas lists every tool's input schema as MCP clients see it.
func mcpSchemas(t *testing.T, td *servertest.Server) map[string]schemaProp {
	t.Helper()
	code, raw := td.MCP.RPC(t, td.Tokens["claude-code"], "tools/list", map[string]any{})
	if code != http.StatusOK {
		t.Fatalf("tools/list: HTTP %d %s", code, raw)
	}
	var env struct {
		Result struct {
			Tools []struct {
				Name        string     `json:"name"`
				InputSchema schemaProp `json:"inputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	out := map[string]schemaProp{}
	for _, tl := range env.Result.Tools {
		out[tl.Name] = tl.InputSchema
	}
	return out
}

// probe is one request that a schema constraint says the server accepts
// (good) or refuses naming the field (bad).
type probe struct {
	what  string
	value any  // nil: the property is removed
	good  bool // the server must not refuse it for this field
}

// text returns a valid value of the named string field, n characters long
// (runes when r is multi-byte), so that only its length is under test.
func text(field string, n int, r string) string {
	if r != "a" {
		return strings.Repeat(r, n)
	}
	switch field {
	case "namespace":
		return "projects/" + strings.Repeat("a", n-len("projects/"))
	case "anchors", "anchor":
		return "path:" + strings.Repeat("a", n-len("path:"))
	case "session_id":
		return strings.Repeat("s", n)
	}
	return strings.Repeat(r, n)
}

// item returns the i-th of distinct valid items of a list field.
func item(field string, i int) any {
	switch field {
	case "topics":
		return fmt.Sprintf("t%d", i)
	case "anchors":
		return fmt.Sprintf("path:src/f%d.go", i)
	case "ids", "exclude":
		return fmt.Sprintf("01JD3M5ZK9Q8W7E6R5T4Y3X%03d", i)[:26]
	case "types": // closed sets: their members, round again past the end
		return storage.Types[i%len(storage.Types)]
	case "statuses":
		return []string{"active", "candidate", "superseded", "deleted"}[i%4]
	case "events":
		return map[string]any{"id": fmt.Sprintf("schema-event-%03d", i), "session_id": "schema", "namespace": "github/acme/schema",
			"kind": "edit", "path": fmt.Sprintf("f%d.go", i)}
	case "reports":
		return map[string]any{"id": fmt.Sprintf("01JD3M5ZK9Q8W7E6R5T4Y3X%03d", i)[:26], "anchor": "path:src/x.go", "state": "available"}
	}
	return fmt.Sprintf("item-%d", i)
}

// probes derives, from one property's schema, the requests at and just past
// each limit it declares.
func probes(name string, p schemaProp, required bool) []probe {
	var ps []probe
	if required {
		ps = append(ps, probe{"required", nil, false})
	}
	switch p.Type {
	case "string":
		if p.Pattern != "" {
			ps = append(ps, probe{"pattern", "not valid here!", false})
		}
		for _, v := range p.Enum {
			ps = append(ps, probe{"enum " + v, v, true})
		}
		if len(p.Enum) > 0 {
			ps = append(ps, probe{"enum", "bogus", false})
		}
		if p.MinLength != nil && *p.MinLength == 1 && !required {
			ps = append(ps, probe{"minLength", "", false})
		}
		if p.MaxLength != nil && p.Pattern == "" && len(p.Enum) == 0 {
			n := *p.MaxLength
			ps = append(ps, probe{"maxLength", text(name, n, "a"), true}, probe{"maxLength+1", text(name, n+1, "a"), false})
		}
		if strings.Contains(p.Description, "bytes of UTF-8") {
			var n int
			fmt.Sscanf(p.Description[strings.Index(p.Description, "At most "):], "At most %d bytes", &n)
			ps = append(ps, probe{"bytes", text(name, n/2, "é"), true}, probe{"bytes+1", text(name, n/2, "é") + "a", false})
		}
	case "integer", "number":
		if p.Maximum != nil {
			ps = append(ps, probe{"maximum", *p.Maximum, true}, probe{"maximum+1", *p.Maximum + 1, false})
		}
		if p.Minimum != nil {
			ps = append(ps, probe{"minimum", *p.Minimum, true}, probe{"minimum-1", *p.Minimum - 1, false})
		}
		if p.ExclusiveMinimum != nil {
			ps = append(ps, probe{"exclusiveMinimum", *p.ExclusiveMinimum, false})
		}
	case "array":
		if p.MaxItems != nil {
			var at []any
			for i := range *p.MaxItems {
				at = append(at, item(name, i))
			}
			ps = append(ps, probe{"maxItems", at, true}, probe{"maxItems+1", append(slices.Clone(at), item(name, *p.MaxItems)), false})
		}
		if p.MinItems != nil && *p.MinItems == 1 {
			ps = append(ps, probe{"minItems", []any{}, false})
		}
		if it := p.Items; it != nil {
			for _, v := range it.Enum {
				ps = append(ps, probe{"item enum " + v, []any{v}, true})
			}
			if len(it.Enum) > 0 {
				ps = append(ps, probe{"item enum", []any{"bogus"}, false})
			}
			if it.MaxLength != nil {
				ps = append(ps, probe{"item maxLength", []any{text(name, *it.MaxLength, "a")}, true},
					probe{"item maxLength+1", []any{text(name, *it.MaxLength+1, "a")}, false})
			}
			if it.MinLength != nil && *it.MinLength == 1 {
				ps = append(ps, probe{"item minLength", []any{""}, false})
			}
		}
	}
	return ps
}

// TestSchema_HoldsWhatTheServerEnforces reads every tool's input schema as
// MCP clients receive it and, for every constraint it declares (required,
// lengths in characters and in bytes, patterns, closed sets, bounds, item
// counts), sends a valid request with that one field at the limit and just
// past it. Past it the server must refuse with INVALID_ARGUMENT naming the
// field; at it, it must not refuse that field. So a schema cannot promise
// what the validators do not enforce, nor hide what they do.
func TestSchema_HoldsWhatTheServerEnforces(t *testing.T) {
	t.Parallel()
	td := servertest.Start(t, parityOptions())
	tok := td.Tokens["claude-code"]
	cases := parityCases(t, td)
	rest := td.REST
	schemas := mcpSchemas(t, td)
	checked := 0
	for tool, schema := range schemas {
		base, ok := cases[tool]
		if !ok {
			t.Errorf("%s: no valid baseline request: add one to parityCases", tool)
			continue
		}
		var walk func(prefix string, s schemaProp, parent func(map[string]any) map[string]any)
		walk = func(prefix string, s schemaProp, at func(map[string]any) map[string]any) {
			for name, p := range s.Properties {
				path := prefix + name
				if p.Type == "object" && p.Properties != nil {
					walk(path+".", p, func(args map[string]any) map[string]any {
						m := at(args)
						sub, _ := m[name].(map[string]any)
						if sub == nil {
							sub = map[string]any{}
							m[name] = sub
						}
						return sub
					})
				}
				for _, pr := range probes(name, p, slices.Contains(s.Required, name)) {
					checked++
					args := base().(map[string]any)
					m := at(args)
					if pr.value == nil {
						delete(m, name)
					} else {
						m[name] = pr.value
					}
					res := rest.Call(t, tok, tool, args)
					field := str(res.Body, "error", "field")
					named := res.Code == "INVALID_ARGUMENT" && (field == path || strings.HasPrefix(field, path+"["))
					switch {
					case pr.good && named:
						t.Errorf("%s %s %s: the schema allows it, the server refuses it: %s", tool, path, pr.what, res.Raw)
					case !pr.good && !named:
						t.Errorf("%s %s %s: the schema forbids it, but the server answered %d %s %s", tool, path, pr.what, res.HTTP, res.Code, truncate(res.Raw))
					}
				}
			}
		}
		walk("", schema, func(args map[string]any) map[string]any { return args })
	}
	t.Logf("%d constraints probed over %d tools", checked, len(schemas))
	if checked < 80 {
		t.Errorf("checked %d constraints; the schemas declare too few", checked)
	}
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}
