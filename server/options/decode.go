package options

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/hearth-memory/hearth/storage/namespace"
)

// key is one top-level option: how to read its JSON value onto Options and
// how to restore its default (for JSON null).
type key struct {
	name string
	// str marks options that take a JSON string, so that Set reads a bare
	// number or boolean as text.
	str bool
	// decode reads a non-null raw value onto o, leaving o unchanged on error.
	decode func(o *Options, raw []byte, path string) error
	reset  func(o, def *Options)
}

func (k *key) apply(o *Options, raw []byte) error {
	if kindOf(raw) == 'n' {
		def := Default()
		k.reset(o, &def)
		return nil
	}
	return k.decode(o, raw, k.name)
}

// keys lists the options in docs/design.md §17 order.
var keys = []key{
	{name: "clients", decode: decodeClients, reset: func(o, d *Options) { o.Clients = d.Clients }},
	{name: "github_owner", str: true, decode: stringOpt(func(o *Options) *string { return &o.GithubOwner }, namespace.ASCIILower),
		reset: func(o, d *Options) { o.GithubOwner = d.GithubOwner }},
	{name: "forge_hosts", decode: stringsOpt(func(o *Options) *[]string { return &o.ForgeHosts }, namespace.ASCIILower),
		reset: func(o, d *Options) { o.ForgeHosts = d.ForgeHosts }},
	{name: "forge_owner", str: true, decode: stringOpt(func(o *Options) *string { return &o.ForgeOwner }, namespace.ASCIILower),
		reset: func(o, d *Options) { o.ForgeOwner = d.ForgeOwner }},
	{name: "project_links", decode: decodeProjectLinks, reset: func(o, d *Options) { o.ProjectLinks = d.ProjectLinks }},
	{name: "hubs", decode: stringsOpt(func(o *Options) *[]string { return &o.Hubs }, namespace.ASCIILower),
		reset: func(o, d *Options) { o.Hubs = d.Hubs }},
	{name: "namespace_renames", decode: decodeRenames, reset: func(o, d *Options) { o.NamespaceRenames = d.NamespaceRenames }},
	{name: "review_at", str: true, decode: decodeReviewAt, reset: func(o, d *Options) { o.ReviewAt = d.ReviewAt }},
	{name: "candidate_expiry_days", decode: intOpt(func(o *Options) *int { return &o.CandidateExpiryDays }),
		reset: func(o, d *Options) { o.CandidateExpiryDays = d.CandidateExpiryDays }},
	{name: "summary_candidates", decode: boolOpt(func(o *Options) *bool { return &o.SummaryCandidates }),
		reset: func(o, d *Options) { o.SummaryCandidates = d.SummaryCandidates }},
	{name: "anchor_sweep_hours", decode: intOpt(func(o *Options) *int { return &o.AnchorSweepHours }),
		reset: func(o, d *Options) { o.AnchorSweepHours = d.AnchorSweepHours }},
	{name: "context_budget_tokens", decode: intOpt(func(o *Options) *int { return &o.ContextBudgetTokens }),
		reset: func(o, d *Options) { o.ContextBudgetTokens = d.ContextBudgetTokens }},
	{name: "hard_context_limit_tokens", decode: intOpt(func(o *Options) *int { return &o.HardContextLimitTokens }),
		reset: func(o, d *Options) { o.HardContextLimitTokens = d.HardContextLimitTokens }},
	{name: "retention_deleted_days", decode: intOpt(func(o *Options) *int { return &o.RetentionDeletedDays }),
		reset: func(o, d *Options) { o.RetentionDeletedDays = d.RetentionDeletedDays }},
	{name: "capture_retention_days", decode: intOpt(func(o *Options) *int { return &o.CaptureRetentionDays }),
		reset: func(o, d *Options) { o.CaptureRetentionDays = d.CaptureRetentionDays }},
	{name: "audit_retention_days", decode: intOpt(func(o *Options) *int { return &o.AuditRetentionDays }),
		reset: func(o, d *Options) { o.AuditRetentionDays = d.AuditRetentionDays }},
	{name: "ollama_url", str: true, decode: stringOpt(func(o *Options) *string { return &o.OllamaURL }, trimURL),
		reset: func(o, d *Options) { o.OllamaURL = d.OllamaURL }},
	{name: "ollama_fallback_url", str: true, decode: stringOpt(func(o *Options) *string { return &o.OllamaFallbackURL }, trimURL),
		reset: func(o, d *Options) { o.OllamaFallbackURL = d.OllamaFallbackURL }},
	{name: "ollama_direct_urls", decode: stringsOpt(func(o *Options) *[]string { return &o.OllamaDirectURLs }, trimURL),
		reset: func(o, d *Options) { o.OllamaDirectURLs = d.OllamaDirectURLs }},
	{name: "ollama_model", str: true, decode: stringOpt(func(o *Options) *string { return &o.OllamaModel }, nil),
		reset: func(o, d *Options) { o.OllamaModel = d.OllamaModel }},
	{name: "ollama_models", decode: decodeModelChains, reset: func(o, d *Options) { o.OllamaModels = d.OllamaModels }},
	{name: "ollama_timeout_s", decode: decodeOllamaTimeout, reset: func(o, d *Options) { o.OllamaTimeout = d.OllamaTimeout }},
	{name: "embed_url", str: true, decode: stringOpt(func(o *Options) *string { return &o.EmbedURL }, trimURL),
		reset: func(o, d *Options) { o.EmbedURL = d.EmbedURL }},
	{name: "embed_model", str: true, decode: stringOpt(func(o *Options) *string { return &o.EmbedModel }, nil),
		reset: func(o, d *Options) { o.EmbedModel = d.EmbedModel }},
	{name: "embed_timeout_s", decode: decodeSeconds(func(o *Options) *time.Duration { return &o.EmbedTimeout }),
		reset: func(o, d *Options) { o.EmbedTimeout = d.EmbedTimeout }},
	{name: "embed_index_dims", decode: intOpt(func(o *Options) *int { return &o.EmbedIndexDims }),
		reset: func(o, d *Options) { o.EmbedIndexDims = d.EmbedIndexDims }},
	{name: "rerank_url", str: true, decode: stringOpt(func(o *Options) *string { return &o.RerankURL }, trimURL),
		reset: func(o, d *Options) { o.RerankURL = d.RerankURL }},
	{name: "rerank_model", str: true, decode: stringOpt(func(o *Options) *string { return &o.RerankModel }, nil),
		reset: func(o, d *Options) { o.RerankModel = d.RerankModel }},
	{name: "rerank_timeout_s", decode: decodeSeconds(func(o *Options) *time.Duration { return &o.RerankTimeout }),
		reset: func(o, d *Options) { o.RerankTimeout = d.RerankTimeout }},
	{name: "model_daily_calls", decode: intOpt(func(o *Options) *int { return &o.ModelDailyCalls }),
		reset: func(o, d *Options) { o.ModelDailyCalls = d.ModelDailyCalls }},
	{name: "model_daily_tokens", decode: intOpt(func(o *Options) *int { return &o.ModelDailyTokens }),
		reset: func(o, d *Options) { o.ModelDailyTokens = d.ModelDailyTokens }},
	{name: "min_coverage", decode: decodeMinCoverage, reset: func(o, d *Options) { o.MinCoverage = d.MinCoverage }},
	{name: "page_token_required", decode: boolOpt(func(o *Options) *bool { return &o.PageTokenRequired }),
		reset: func(o, d *Options) { o.PageTokenRequired = d.PageTokenRequired }},
	{name: "ssl", decode: boolOpt(func(o *Options) *bool { return &o.SSL }), reset: func(o, d *Options) { o.SSL = d.SSL }},
	{name: "certfile", str: true, decode: stringOpt(func(o *Options) *string { return &o.CertFile }, nil),
		reset: func(o, d *Options) { o.CertFile = d.CertFile }},
	{name: "keyfile", str: true, decode: stringOpt(func(o *Options) *string { return &o.KeyFile }, nil),
		reset: func(o, d *Options) { o.KeyFile = d.KeyFile }},
	{name: "database_url", str: true, decode: stringOpt(func(o *Options) *string { return &o.DatabaseURL }, nil),
		reset: func(o, d *Options) { o.DatabaseURL = d.DatabaseURL }},
}

func lookupKey(name string) *key {
	for i := range keys {
		if keys[i].name == name {
			return &keys[i]
		}
	}
	return nil
}

func keyNames() []string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.name
	}
	return names
}

// decodeFile reads a whole options.json onto o.
func decodeFile(o *Options, data []byte) error {
	if kindOf(data) != '{' {
		if len(bytes.TrimSpace(data)) == 0 {
			return errors.New("options: empty; want a JSON object")
		}
		if !json.Valid(data) {
			return errors.New("options: not valid JSON; want a JSON object")
		}
		return errors.New("options: want a JSON object")
	}
	return walkObject(data, "", keyNames(), func(name string, raw []byte, path string) error {
		return lookupKey(name).apply(o, raw)
	})
}

// walkObject calls fn for each member of the JSON object data, refusing keys
// not in known and keys given twice. path names the object ("" at the top).
// Errors from fn are collected, so that one pass reports every bad key;
// broken JSON ends the walk.
func walkObject(data []byte, path string, known []string, fn func(key string, raw []byte, path string) error) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // '{', checked by the caller
		return syntaxError(path, err)
	}
	var list errs
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			list.add(syntaxError(path, err))
			return list.err()
		}
		name, _ := tok.(string) // object keys are always strings
		sub := name
		if path != "" {
			sub = path + "." + name
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			list.add(syntaxError(sub, err))
			return list.err()
		}
		switch {
		case !contains(known, name):
			list.add(unknownKeyError(sub, name, known))
		case seen[name]:
			list.add(errorf(sub, "is given more than once"))
		default:
			seen[name] = true
			list.add(fn(name, raw, sub))
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		list.add(syntaxError(path, err))
		return list.err()
	}
	if path == "" {
		if _, err := dec.Token(); err != io.EOF {
			list.add(errors.New("options: more data after the JSON object"))
		}
	}
	return list.err()
}

func syntaxError(path string, err error) error {
	var se *json.SyntaxError
	msg := err.Error()
	if errors.As(err, &se) {
		msg = fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	} else if err == io.ErrUnexpectedEOF || err == io.EOF {
		msg = "unexpected end of JSON"
	}
	if path == "" {
		return fmt.Errorf("options: invalid JSON: %s", msg)
	}
	return errorf(path, "invalid JSON: %s", msg)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// kindOf returns the first byte of a JSON value: '{', '[', '"', 't', 'f',
// 'n', or '0' for a number (and 0 for anything else).
func kindOf(raw []byte) byte {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return 0
	}
	switch c := raw[0]; {
	case c == '-' || (c >= '0' && c <= '9'):
		return '0'
	default:
		return c
	}
}

func kindName(raw []byte) string {
	switch kindOf(raw) {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '0':
		return "a number"
	}
	return "not JSON"
}

func typeError(path string, want string, raw []byte) *Error {
	return errorf(path, "must be %s, got %s", want, kindName(raw))
}

func decString(raw []byte, path string) (string, error) {
	if kindOf(raw) != '"' {
		return "", typeError(path, "a string", raw)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", typeError(path, "a string", raw)
	}
	return s, nil
}

func decInt(raw []byte, path string) (int, error) {
	if kindOf(raw) != '0' {
		return 0, typeError(path, "a whole number", raw)
	}
	text := string(bytes.TrimSpace(raw))
	n, err := strconv.ParseInt(text, 10, strconv.IntSize)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, errorf(path, "is out of range, got %s", show(text))
		}
		return 0, errorf(path, "must be a whole number, got %s", show(text))
	}
	return int(n), nil
}

func decFloat(raw []byte, path string) (float64, error) {
	if kindOf(raw) != '0' {
		return 0, typeError(path, "a number", raw)
	}
	text := string(bytes.TrimSpace(raw))
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, errorf(path, "is out of range, got %s", show(text))
	}
	return f, nil
}

// decList calls fn for each element of a JSON list; it returns the first
// error. A list with no elements calls fn never.
func decList(raw []byte, path string, fn func(raw []byte, path string) error) error {
	if kindOf(raw) != '[' {
		return typeError(path, "a list", raw)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return typeError(path, "a list", raw)
	}
	var list errs
	for i, e := range elems {
		list.add(fn(e, fmt.Sprintf("%s[%d]", path, i)))
	}
	return list.err()
}

// decStrings reads a list of strings, mapping each through norm (if not
// nil). An empty list gives nil.
func decStrings(raw []byte, path string, norm func(string) string) ([]string, error) {
	var out []string
	err := decList(raw, path, func(raw []byte, path string) error {
		s, err := decString(raw, path)
		if norm != nil {
			s = norm(s)
		}
		out = append(out, s)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func decObject(raw []byte, path string, known []string, fn func(key string, raw []byte, path string) error) error {
	if kindOf(raw) != '{' {
		return typeError(path, "an object", raw)
	}
	return walkObject(raw, path, known, func(key string, raw []byte, path string) error {
		if kindOf(raw) == 'n' {
			return nil // null keeps the member unset
		}
		return fn(key, raw, path)
	})
}

func stringOpt(field func(*Options) *string, norm func(string) string) func(*Options, []byte, string) error {
	return func(o *Options, raw []byte, path string) error {
		s, err := decString(raw, path)
		if err != nil {
			return err
		}
		if norm != nil {
			s = norm(s)
		}
		*field(o) = s
		return nil
	}
}

func stringsOpt(field func(*Options) *[]string, norm func(string) string) func(*Options, []byte, string) error {
	return func(o *Options, raw []byte, path string) error {
		list, err := decStrings(raw, path, norm)
		if err != nil {
			return err
		}
		*field(o) = list
		return nil
	}
}

func intOpt(field func(*Options) *int) func(*Options, []byte, string) error {
	return func(o *Options, raw []byte, path string) error {
		n, err := decInt(raw, path)
		if err != nil {
			return err
		}
		*field(o) = n
		return nil
	}
}

func boolOpt(field func(*Options) *bool) func(*Options, []byte, string) error {
	return func(o *Options, raw []byte, path string) error {
		switch string(bytes.TrimSpace(raw)) {
		case "true":
			*field(o) = true
		case "false":
			*field(o) = false
		default:
			return typeError(path, "true or false", raw)
		}
		return nil
	}
}

func decodeClients(o *Options, raw []byte, path string) error {
	var clients []Client
	err := decList(raw, path, func(raw []byte, path string) error {
		var c Client
		err := decObject(raw, path, []string{"name", "scopes", "ip", "token_sha256"}, func(k string, raw []byte, path string) error {
			switch k {
			case "name":
				s, err := decString(raw, path)
				c.Name = s
				return err
			case "scopes":
				list, err := decStrings(raw, path, nil)
				for _, s := range list {
					c.Scopes = append(c.Scopes, Scope(s))
				}
				return err
			case "ip":
				s, err := decString(raw, path)
				if err != nil || s == "" {
					return err
				}
				ip, err := netip.ParseAddr(s)
				if err != nil {
					return errorf(path, "must be one IP address (no range, no port), got %s", show(s))
				}
				c.IP = ip.Unmap()
				return nil
			default: // token_sha256
				s, err := decString(raw, path)
				c.TokenSHA256 = namespace.ASCIILower(s)
				return err
			}
		})
		clients = append(clients, c)
		return err
	})
	if err != nil {
		return err
	}
	o.Clients = clients
	return nil
}

func decodeProjectLinks(o *Options, raw []byte, path string) error {
	var links []ProjectLink
	err := decList(raw, path, func(raw []byte, path string) error {
		var p ProjectLink
		err := decObject(raw, path, []string{"name", "namespaces"}, func(k string, raw []byte, path string) error {
			var err error
			if k == "name" {
				p.Name, err = decString(raw, path)
				p.Name = namespace.ASCIILower(p.Name)
			} else {
				p.Namespaces, err = decStrings(raw, path, namespace.ASCIILower)
			}
			return err
		})
		links = append(links, p)
		return err
	})
	if err != nil {
		return err
	}
	o.ProjectLinks = links
	return nil
}

func decodeRenames(o *Options, raw []byte, path string) error {
	var renames []Rename
	err := decList(raw, path, func(raw []byte, path string) error {
		var r Rename
		err := decObject(raw, path, []string{"from", "to"}, func(k string, raw []byte, path string) error {
			s, err := decString(raw, path)
			if k == "from" {
				r.From = namespace.ASCIILower(s)
			} else {
				r.To = namespace.ASCIILower(s)
			}
			return err
		})
		renames = append(renames, r)
		return err
	})
	if err != nil {
		return err
	}
	o.NamespaceRenames = renames
	return nil
}

func decodeReviewAt(o *Options, raw []byte, path string) error {
	s, err := decString(raw, path)
	if err != nil {
		return err
	}
	r, ok := parseReviewAt(s)
	if !ok {
		return errorf(path, `must be "HH:MM" (00:00 to 23:59, local time) or "off", got %s`, show(s))
	}
	o.ReviewAt = r
	return nil
}

func parseReviewAt(s string) (ReviewAt, bool) {
	if s == "off" {
		return ReviewAt{Off: true}, true
	}
	if len(s) != 5 || s[2] != ':' {
		return ReviewAt{}, false
	}
	for _, i := range []int{0, 1, 3, 4} {
		if s[i] < '0' || s[i] > '9' {
			return ReviewAt{}, false
		}
	}
	h := int(s[0]-'0')*10 + int(s[1]-'0')
	m := int(s[3]-'0')*10 + int(s[4]-'0')
	if h > 23 || m > 59 {
		return ReviewAt{}, false
	}
	return ReviewAt{Hour: h, Minute: m}, true
}

func decodeModelChains(o *Options, raw []byte, path string) error {
	var m ModelChains
	err := decObject(raw, path, []string{"extraction", "review", "answer"}, func(k string, raw []byte, path string) error {
		list, err := decStrings(raw, path, nil)
		switch k {
		case "extraction":
			m.Extraction = list
		case "review":
			m.Review = list
		default:
			m.Answer = list
		}
		return err
	})
	if err != nil {
		return err
	}
	o.OllamaModels = m
	return nil
}

// Timeouts are range-checked here, before they become Durations, so that no
// huge number overflows into a valid-looking one.

func decodeOllamaTimeout(o *Options, raw []byte, path string) error {
	n, err := decInt(raw, path)
	if err != nil {
		return err
	}
	if n < minOllamaTimeoutS || n > maxOllamaTimeoutS {
		return rangeError(path, minOllamaTimeoutS, maxOllamaTimeoutS, n)
	}
	o.OllamaTimeout = time.Duration(n) * time.Second
	return nil
}

// decodeSeconds decodes a model call's timeout (embed_timeout_s,
// rerank_timeout_s): fractional seconds within the encoder's bounds.
func decodeSeconds(field func(*Options) *time.Duration) func(*Options, []byte, string) error {
	return func(o *Options, raw []byte, path string) error {
		f, err := decFloat(raw, path)
		if err != nil {
			return err
		}
		if f < minEmbedTimeout.Seconds() || f > maxEmbedTimeout.Seconds() {
			return errorf(path, "must be %g to %g seconds, got %s", minEmbedTimeout.Seconds(), maxEmbedTimeout.Seconds(),
				strconv.FormatFloat(f, 'g', -1, 64))
		}
		*field(o) = time.Duration(math.Round(f * float64(time.Second)))
		return nil
	}
}

func decodeMinCoverage(o *Options, raw []byte, path string) error {
	f, err := decFloat(raw, path)
	if err != nil {
		return err
	}
	if f < 0 || f > 1 {
		return errorf(path, "must be 0 to 1, got %s", strconv.FormatFloat(f, 'g', -1, 64))
	}
	o.MinCoverage = f
	return nil
}

// trimURL drops trailing slashes, so that ".../v1/" reads as ".../v1".
func trimURL(s string) string { return strings.TrimRight(s, "/") }
