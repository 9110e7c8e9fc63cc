package addon

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// This file mirrors how the Home Assistant Supervisor checks an add-on's
// schema and writes /data/options.json (supervisor/addons/options.py,
// AddonOptions, and SCHEMA_ELEMENT in supervisor/addons/validate.py), so
// that the tests can produce the options.json Hearth will read without a
// Supervisor. It covers the types config.yaml uses.

// schemaElementRE is the Supervisor's RE_SCHEMA_ELEMENT. Go's regexp accepts
// Python's (?P<name>…) groups as they are.
var schemaElementRE = regexp.MustCompile(`^(?:` +
	`|bool` +
	`|email` +
	`|url` +
	`|port` +
	`|device(?:\((?P<filter>subsystem=[a-z]+)\))?` +
	`|str(?:\((?P<s_min>\d+)?,(?P<s_max>\d+)?\))?` +
	`|password(?:\((?P<p_min>\d+)?,(?P<p_max>\d+)?\))?` +
	`|int(?:\((?P<i_min>\d+)?,(?P<i_max>\d+)?\))?` +
	`|float(?:\((?P<f_min>[\d\.]+)?,(?P<f_max>[\d\.]+)?\))?` +
	`|match\((?P<match>.*)\)` +
	`|list\((?P<list>.+)\)` +
	`)\??$`)

// checkSchemaElement reports what the Supervisor's SCHEMA_ELEMENT refuses:
// a leaf that is not a known type, or a list directly inside a list.
func checkSchemaElement(path string, v any) []string {
	switch v := v.(type) {
	case string:
		if !schemaElementRE.MatchString(v) {
			return []string{fmt.Sprintf("%s: unknown type %q", path, v)}
		}
		if m := group(v, "match"); m != "" {
			if _, err := regexp.Compile(m); err != nil {
				return []string{fmt.Sprintf("%s: %v", path, err)}
			}
		}
		return nil
	case []any:
		if len(v) != 1 {
			return []string{fmt.Sprintf("%s: a list schema holds exactly one element, got %d", path, len(v))}
		}
		if _, ok := v[0].([]any); ok {
			return []string{fmt.Sprintf("%s: a list may not directly contain another list", path)}
		}
		return checkSchemaElement(path+"[]", v[0])
	case map[string]any:
		var bad []string
		for _, k := range sortedKeys(v) {
			bad = append(bad, checkSchemaElement(path+"."+k, v[k])...)
		}
		return bad
	}
	return []string{fmt.Sprintf("%s: schema element of type %T", path, v)}
}

func group(typ, name string) string {
	m := schemaElementRE.FindStringSubmatch(typ)
	if m == nil {
		return ""
	}
	return m[schemaElementRE.SubexpIndex(name)]
}

// pyFloat is a float that encodes as Python's json module writes it: 2.0,
// not 2, as in the options.json the Supervisor writes.
type pyFloat float64

func (f pyFloat) MarshalJSON() ([]byte, error) {
	s := strconv.FormatFloat(float64(f), 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return []byte(s), nil
}

// supervisorOptions returns what the Supervisor writes to options.json for
// the add-on's defaults merged with the user's options: the top-level merge
// {**defaults, **user}, validated against schema. Keys not in the schema are
// dropped (the Supervisor logs a warning); optional keys left unset stay
// absent.
func supervisorOptions(schema, defaults, user map[string]any) (map[string]any, error) {
	merged := make(map[string]any, len(defaults)+len(user))
	for k, v := range defaults {
		merged[k] = v
	}
	for k, v := range user {
		merged[k] = v
	}
	return validateDict(schema, merged, "root")
}

func validateElement(typ, value any, key string) (any, error) {
	switch typ := typ.(type) {
	case []any:
		list, ok := value.([]any)
		if !ok {
			return nil, fmt.Errorf("invalid list for option '%s'", key)
		}
		out := make([]any, 0, len(list))
		for _, v := range list {
			e, err := validateElement(typ[0], v, key)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		return out, nil
	case map[string]any:
		dict, ok := value.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("invalid dict for option '%s'", key)
		}
		return validateDict(typ, dict, key)
	case string:
		return validateSingle(typ, value, key)
	}
	return nil, fmt.Errorf("schema of option '%s' has type %T", key, typ)
}

func validateDict(schema, dict map[string]any, root string) (map[string]any, error) {
	out := make(map[string]any, len(dict))
	for _, k := range sortedKeys(dict) {
		typ, ok := schema[k]
		if !ok {
			continue // the Supervisor drops unknown options
		}
		v, err := validateElement(typ, dict[k], k)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	// _check_missing_options: a missing key is fine only when its schema
	// (or, for a list, the list's element) is a string ending in "?".
	for _, k := range sortedKeys(schema) {
		if _, ok := out[k]; ok {
			continue
		}
		miss := schema[k]
		if l, ok := miss.([]any); ok && len(l) > 0 {
			miss = l[0]
		}
		if s, ok := miss.(string); ok && strings.HasSuffix(s, "?") {
			continue
		}
		return nil, fmt.Errorf("missing option '%s' in %s", k, root)
	}
	return out, nil
}

func validateSingle(typ string, value any, key string) (any, error) {
	if value == nil {
		return nil, fmt.Errorf("missing required option '%s'", key)
	}
	if !schemaElementRE.MatchString(typ) {
		return nil, fmt.Errorf("unknown type '%s'", typ)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("option '%s' (%s): %s", key, typ, fmt.Sprintf(format, args...))
	}
	bounds := func(minGroup, maxGroup string) (float64, float64) {
		lo, hi := math.Inf(-1), math.Inf(1)
		if s := group(typ, minGroup); s != "" {
			lo, _ = strconv.ParseFloat(s, 64)
		}
		if s := group(typ, maxGroup); s != "" {
			hi, _ = strconv.ParseFloat(s, 64)
		}
		return lo, hi
	}
	switch {
	case strings.HasPrefix(typ, "str"), strings.HasPrefix(typ, "password"):
		s, ok := value.(string)
		if !ok {
			return nil, bad("not a string: %v", value)
		}
		// vol.Range over a string compares it with numbers in Python; the
		// schema uses no str bounds, so refuse them here.
		if group(typ, "s_min")+group(typ, "s_max")+group(typ, "p_min")+group(typ, "p_max") != "" {
			return nil, bad("str bounds are not mirrored")
		}
		return s, nil
	case strings.HasPrefix(typ, "int"):
		var n float64
		switch v := value.(type) {
		case int:
			n = float64(v)
		case float64:
			n = math.Trunc(v) // vol.Coerce(int)
		case string:
			i, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return nil, bad("not an integer: %q", v)
			}
			n = float64(i)
		default:
			return nil, bad("not an integer: %v", value)
		}
		lo, hi := bounds("i_min", "i_max")
		if n < lo || n > hi {
			return nil, bad("%v out of range", n)
		}
		return int(n), nil
	case strings.HasPrefix(typ, "float"):
		var f float64
		switch v := value.(type) {
		case int:
			f = float64(v)
		case float64:
			f = v
		case string:
			var err error
			if f, err = strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
				return nil, bad("not a number: %q", v)
			}
		default:
			return nil, bad("not a number: %v", value)
		}
		lo, hi := bounds("f_min", "f_max")
		if f < lo || f > hi {
			return nil, bad("%v out of range", f)
		}
		return pyFloat(f), nil
	case strings.HasPrefix(typ, "bool"):
		switch v := value.(type) {
		case bool:
			return v, nil
		case string:
			switch strings.ToLower(v) {
			case "1", "true", "yes", "on", "enable":
				return true, nil
			case "0", "false", "no", "off", "disable":
				return false, nil
			}
		case int:
			return v != 0, nil
		}
		return nil, bad("not a boolean: %v", value)
	case strings.HasPrefix(typ, "url"):
		// vol.Url: urlparse must find a scheme and a network location.
		s := fmt.Sprint(value)
		u, err := url.Parse(s)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, bad("not a URL: %q", s)
		}
		return value, nil
	case strings.HasPrefix(typ, "match"):
		// vol.Match uses re.match: anchored at the start only.
		re := regexp.MustCompile(`^(?:` + group(typ, "match") + `)`)
		s := fmt.Sprint(value)
		if !re.MatchString(s) {
			return nil, bad("%q does not match", s)
		}
		return s, nil
	case strings.HasPrefix(typ, "list"):
		s := fmt.Sprint(value)
		if !slices.Contains(strings.Split(group(typ, "list"), "|"), s) {
			return nil, bad("%q is not one of %s", s, group(typ, "list"))
		}
		return s, nil
	}
	return nil, bad("type not mirrored by this test")
}
