package options

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// FileName is the name of the options file inside the data directory.
const FileName = "options.json"

// AddonDataDir is the add-on's data directory; the Supervisor writes
// AddonDataDir/FileName.
const AddonDataDir = "/data"

// MaxFileSize bounds the options file; a larger one is refused unread.
const MaxFileSize = 1 << 20

// Scope is a permission a client holds (docs/design.md R-A2).
type Scope string

// The five scopes. Each RPC needs exactly one of them.
const (
	ScopeRead   Scope = "read"
	ScopeWrite  Scope = "write"
	ScopeDelete Scope = "delete"
	ScopeExport Scope = "export"
	ScopeAdmin  Scope = "admin"
)

// DefaultRerankTimeout is rerank_timeout_s's default: the prompt hook
// gives its search 300 ms from its own start (docs/claude-code.md), so a
// slower rerank would only lose the search.
const DefaultRerankTimeout = 150 * time.Millisecond

// DefaultMinCoverage is min_coverage's default, chosen on the eval
// (docs/abstention.md).
const DefaultMinCoverage = 0.2

// Scopes lists every scope, in the order the documentation gives them.
func Scopes() []Scope {
	return []Scope{ScopeRead, ScopeWrite, ScopeDelete, ScopeExport, ScopeAdmin}
}

// Valid reports whether s is one of the five scopes.
func (s Scope) Valid() bool { return slices.Contains(Scopes(), s) }

// scopeNames spells the five scopes for a message: "read, write, …".
func scopeNames() string {
	names := make([]string, 0, 5)
	for _, s := range Scopes() {
		names = append(names, string(s))
	}
	return strings.Join(names, ", ")
}

// Client is one entry of the clients option (docs/design.md R-A1).
type Client struct {
	Name   string
	Scopes []Scope
	// IP identifies an address client by source address; the zero Addr
	// when unset.
	IP netip.Addr
	// TokenSHA256 is the lower-case hex SHA-256 of a token made elsewhere;
	// "" when unset. A client with no TokenSHA256 gets a generated token.
	TokenSHA256 string
}

// ClientKind says how a configured client is identified (docs/design.md
// R-A1): memory_tokens reports it, start-up provisions tokens by it and
// the page describes each client by it.
type ClientKind string

// The three client kinds.
const (
	// KindGenerated: Hearth generates the client's token.
	KindGenerated ClientKind = "generated"
	// KindSupplied: the admin supplied the token's SHA-256 (token_sha256).
	// Such a client may also have an ip.
	KindSupplied ClientKind = "supplied"
	// KindAddress: the client is identified by its ip alone, with no token.
	KindAddress ClientKind = "address"
)

// Kind says how c is identified: supplied when it has token_sha256,
// address when it has only an ip, generated otherwise.
func (c Client) Kind() ClientKind {
	switch {
	case c.TokenSHA256 != "":
		return KindSupplied
	case c.IP.IsValid():
		return KindAddress
	}
	return KindGenerated
}

// ValidClientName reports whether name is a client's name: 1 to 64 of
// a-z, 0-9, '.', '_' and '-', starting with a letter or digit.
func ValidClientName(name string) bool { return clientNameRE.MatchString(name) }

// HasScope reports whether c was configured with scope s. It does not apply
// the address-client limit of docs/design.md R-A4; the interceptor does.
func (c Client) HasScope(s Scope) bool {
	for _, have := range c.Scopes {
		if have == s {
			return true
		}
	}
	return false
}

// ProjectLink is one entry of project_links: repository namespaces that
// share the scope projects/<Name> (docs/design.md R-N3).
type ProjectLink struct {
	Name       string
	Namespaces []string
}

// Namespace returns the link's namespace, projects/<Name>.
func (p ProjectLink) Namespace() string { return "projects/" + p.Name }

// Rename is one entry of namespace_renames: the owner prefix From
// (github/<owner> or gitea/<owner>) becomes To at start (docs/design.md R-N6).
type Rename struct {
	From, To string
}

// ReviewAt is the local time of the nightly review, or Off.
type ReviewAt struct {
	Off          bool
	Hour, Minute int
}

// String returns "off" or the time as "HH:MM", as written in options.json.
func (r ReviewAt) String() string {
	if r.Off {
		return "off"
	}
	return fmt.Sprintf("%02d:%02d", r.Hour, r.Minute)
}

// ModelChains are the per-kind model chains of ollama_models. An empty chain
// means ollama_model alone.
type ModelChains struct {
	Extraction, Review, Answer []string
}

// Options are Hearth's start-up options (docs/design.md §17), one field per key of
// options.json. Empty lists and strings mean unset; Default gives the
// defaults. Values are normalised as Parse leaves them (see the package
// documentation).
type Options struct {
	// Clients may call Hearth (clients); never empty once valid.
	Clients []Client

	// GithubOwner narrows memory_namespace to GitHub remotes under this
	// owner (github_owner); ForgeOwner does the same on ForgeHosts
	// (forge_owner). Lower case; "" for every owner.
	GithubOwner, ForgeOwner string

	// ForgeHosts are Gitea/Forgejo hosts, "host" or "host:port", lower case
	// (forge_hosts). Hubs are namespaces whose search and task match reach
	// every repository namespace (hubs). OllamaDirectURLs are model servers
	// used only while neither OllamaURL nor OllamaFallbackURL is live
	// (ollama_direct_urls).
	ForgeHosts, Hubs, OllamaDirectURLs []string

	// ProjectLinks (project_links) and NamespaceRenames (namespace_renames).
	ProjectLinks     []ProjectLink
	NamespaceRenames []Rename

	// ReviewAt is the local time of the nightly review (review_at).
	ReviewAt ReviewAt

	// CandidateExpiryDays (0 = off), AnchorSweepHours (1–168),
	// ContextBudgetTokens ≤ HardContextLimitTokens, RetentionDeletedDays,
	// CaptureRetentionDays (0 = kept; docs/capture.md).
	CandidateExpiryDays, AnchorSweepHours, ContextBudgetTokens, HardContextLimitTokens, RetentionDeletedDays int
	CaptureRetentionDays                                                                                     int

	// AuditRetentionDays (audit_retention_days, 0–3650; 0 keeps the audit
	// forever): the nightly maintenance deletes audit rows older than
	// this, except those of records still held (docs/operations.md).
	AuditRetentionDays int

	// SummaryCandidates keeps a session close's summary as a candidate.
	SummaryCandidates bool

	// SSL serves the port over TLS with CertFile and KeyFile, file names
	// in Home Assistant's /ssl folder, as Home Assistant add-ons do (ssl,
	// certfile, keyfile; docs/running.md).
	SSL               bool
	CertFile, KeyFile string

	// Model server and encoder base URLs, "" when unset: absolute http(s),
	// no user info, no trailing '/'. One ending in /v1 is OpenAI-style.
	OllamaURL, OllamaFallbackURL, EmbedURL string

	// RerankURL is the rerank server's base URL (rerank_url), as the others;
	// "" means no rerank stage. RerankModel is its model (rerank_model) and
	// RerankTimeout bounds one rerank call (rerank_timeout_s, fractional).
	RerankURL, RerankModel string
	RerankTimeout          time.Duration

	// OllamaModel is the default model; EmbedModel the encoder's model.
	OllamaModel, EmbedModel string

	// OllamaModels are the per-kind chains (ollama_models); an empty chain
	// means OllamaModel alone.
	OllamaModels ModelChains

	// OllamaTimeout is whole seconds (ollama_timeout_s); EmbedTimeout may be
	// fractional (embed_timeout_s).
	OllamaTimeout, EmbedTimeout time.Duration

	// EmbedIndexDims is how many leading coordinates of each vector the
	// in-memory vector index keeps (embed_index_dims), for an encoder
	// trained so that they are a vector of their own (Matryoshka); 0, the
	// default, keeps them all (docs/operations.md, "Vector memory").
	EmbedIndexDims int

	// ModelDailyCalls and ModelDailyTokens cap each model server's calls and
	// tokens (prompt and reply) per local day (model_daily_calls,
	// model_daily_tokens); 0 means no cap.
	ModelDailyCalls, ModelDailyTokens int
	// MinCoverage is the relevance bar (min_coverage), 0 to 1: a search
	// that asks to abstain returns nothing unless a hit's record holds at
	// least this share of the query's IDF-weighted words (docs/abstention.md).
	MinCoverage float64

	// PageTokenRequired makes the dashboard ask every caller but Home
	// Assistant's ingress proxy for a token of a client with read and admin
	// scopes (page_token_required; docs/running.md, "The dashboard").
	PageTokenRequired bool

	// DatabaseURL is the PostgreSQL database to store in (database_url,
	// `hearth serve --database`): a postgres:// or postgresql:// URL; "",
	// the default, keeps the SQLite file in the data directory
	// (docs/operations.md, "PostgreSQL"). It may carry a password: nothing
	// prints it but Redacted's form.
	DatabaseURL string
}

// Default returns the options Hearth runs with when nothing is configured.
// Each call returns fresh slices.
func Default() Options {
	return Options{
		Clients: []Client{
			{Name: "claude-code", Scopes: []Scope{ScopeRead, ScopeWrite, ScopeDelete}},
			{Name: "codex", Scopes: []Scope{ScopeRead, ScopeWrite, ScopeDelete}},
			{Name: "copilot", Scopes: []Scope{ScopeRead, ScopeWrite, ScopeDelete}},
			{Name: "gemini-cli", Scopes: []Scope{ScopeRead, ScopeWrite, ScopeDelete}},
			{Name: "opencode", Scopes: []Scope{ScopeRead, ScopeWrite, ScopeDelete}},
		},
		ReviewAt:               ReviewAt{Hour: 3},
		CandidateExpiryDays:    14,
		AnchorSweepHours:       6,
		ContextBudgetTokens:    4000,
		HardContextLimitTokens: 8000,
		RetentionDeletedDays:   30,
		CaptureRetentionDays:   14,
		AuditRetentionDays:     365,
		OllamaModel:            "qwen3.5:9b",
		EmbedModel:             "qwen3-emb-0.6b",
		OllamaTimeout:          120 * time.Second,
		EmbedTimeout:           2 * time.Second,
		RerankModel:            "qwen3-reranker-0.6b",
		RerankTimeout:          DefaultRerankTimeout,
		ModelDailyCalls:        DefaultModelDailyCalls,
		ModelDailyTokens:       DefaultModelDailyTokens,
		MinCoverage:            DefaultMinCoverage,
		CertFile:               "fullchain.pem",
		KeyFile:                "privkey.pem",
	}
}

// The default daily budget of each model server: room for a busy day's
// extractions and a nightly review of MaxReviewed candidates, a bound on a
// loop that would call all day.
const (
	DefaultModelDailyCalls  = 2000
	DefaultModelDailyTokens = 4000000
)

// Path returns the options file of a data directory: DIR/options.json.
func Path(dataDir string) string { return filepath.Join(dataDir, FileName) }

// Load reads the options file at path onto Default() (a missing file gives
// the defaults), applies overrides ("key=value", as `hearth serve --option`
// gives them, see SetOverride) in order, and validates the result, so an
// override can rescue a bad value in the file: the file's error about a key
// is dropped when an override sets that key. Errors about the file are
// prefixed with path; an invalid option is still an *Error under errors.As.
func Load(path string, overrides ...string) (Options, error) {
	o := Default()
	data, err := os.ReadFile(path)
	exists := err == nil
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return Options{}, err
	case len(data) > MaxFileSize:
		return Options{}, fmt.Errorf("%s: options: larger than %d bytes", path, MaxFileSize)
	default:
		overridden := map[string]bool{}
		for _, kv := range overrides {
			key, _, _ := strings.Cut(kv, "=")
			overridden[key] = true
		}
		var kept errs
		for _, e := range flatten(decodeFile(&o, data)) {
			var oe *Error
			if errors.As(e, &oe) && overridden[topKey(oe.Option)] {
				continue
			}
			kept.add(e)
		}
		if err := kept.err(); err != nil {
			return Options{}, fmt.Errorf("%s: %w", path, err)
		}
	}
	for _, kv := range overrides {
		if err := o.SetOverride(kv); err != nil {
			return Options{}, err
		}
	}
	if err := o.Validate(); err != nil {
		if exists {
			return Options{}, fmt.Errorf("%s: %w", path, err)
		}
		return Options{}, err
	}
	return o, nil
}

// flatten lists the errors joined in err.
func flatten(err error) []error {
	var l errs
	l.add(err)
	return l
}

// topKey is the options.json key an error's option path starts with:
// clients for clients[1].scopes[0].
func topKey(option string) string {
	if i := strings.IndexAny(option, ".["); i >= 0 {
		return option[:i]
	}
	return option
}

// Parse reads an options.json document onto Default() and validates the
// result. It returns an *Error (or several, joined) naming each option that
// is unknown, of the wrong type or invalid; errors about the document as a
// whole (not JSON, not an object, too large) are plain errors.
func Parse(r io.Reader) (Options, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return Options{}, fmt.Errorf("options: %w", err)
	}
	if len(data) > MaxFileSize {
		return Options{}, fmt.Errorf("options: larger than %d bytes", MaxFileSize)
	}
	o := Default()
	if err := decodeFile(&o, data); err != nil {
		return Options{}, err
	}
	if err := o.Validate(); err != nil {
		return Options{}, err
	}
	return o, nil
}

// Set applies one override, as `hearth serve --option key=value` does: key
// is an options.json key and value is read as JSON when it parses as JSON,
// else as a bare string. For options that take a string, a bare number or
// boolean is read as that text (ollama_model=7 names the model "7"); JSON
// null restores the default; to give a string "null", quote it.
//
// Set checks the value's type and form but not the whole: call Validate
// after the last override, since options depend on each other (the context
// budget and its hard limit). On error o is unchanged.
func (o *Options) Set(key, value string) error {
	k := lookupKey(key)
	if k == nil {
		return unknownKeyError(key, key, keyNames())
	}
	raw := []byte(value)
	if !json.Valid(raw) {
		raw = quoteJSON(value)
	} else if k.str {
		if c := kindOf(raw); c != '"' && c != 'n' {
			raw = quoteJSON(value)
		}
	}
	return k.apply(o, raw)
}

// SetOverride applies one "key=value" override with Set, splitting at the
// first '='.
func (o *Options) SetOverride(kv string) error {
	key, value, ok := strings.Cut(kv, "=")
	if !ok || key == "" {
		// The text is not echoed: it may be a URL carrying a password.
		return errors.New("option override: want key=value")
	}
	return o.Set(key, value)
}

func quoteJSON(s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return b
}

// MarshalJSON encodes o in the shape of options.json: every key of docs/design.md
// §17, in its order, with unset optional keys (empty strings, lists and
// chains) left out, as the Supervisor leaves them out. Parse reads the
// result back to an equal Options when o is valid.
func (o Options) MarshalJSON() ([]byte, error) {
	f := file{
		GithubOwner:            o.GithubOwner,
		ForgeHosts:             o.ForgeHosts,
		ForgeOwner:             o.ForgeOwner,
		Hubs:                   o.Hubs,
		ReviewAt:               o.ReviewAt.String(),
		CandidateExpiryDays:    o.CandidateExpiryDays,
		SummaryCandidates:      o.SummaryCandidates,
		AnchorSweepHours:       o.AnchorSweepHours,
		ContextBudgetTokens:    o.ContextBudgetTokens,
		HardContextLimitTokens: o.HardContextLimitTokens,
		RetentionDeletedDays:   o.RetentionDeletedDays,
		CaptureRetentionDays:   o.CaptureRetentionDays,
		AuditRetentionDays:     o.AuditRetentionDays,
		OllamaURL:              o.OllamaURL,
		OllamaFallbackURL:      o.OllamaFallbackURL,
		OllamaDirectURLs:       o.OllamaDirectURLs,
		OllamaModel:            o.OllamaModel,
		OllamaTimeoutS:         int64(o.OllamaTimeout / time.Second),
		EmbedURL:               o.EmbedURL,
		EmbedModel:             o.EmbedModel,
		EmbedTimeoutS:          o.EmbedTimeout.Seconds(),
		EmbedIndexDims:         o.EmbedIndexDims,
		RerankURL:              o.RerankURL,
		RerankModel:            o.RerankModel,
		RerankTimeoutS:         o.RerankTimeout.Seconds(),
		ModelDailyCalls:        o.ModelDailyCalls,
		ModelDailyTokens:       o.ModelDailyTokens,
		MinCoverage:            o.MinCoverage,
		PageTokenRequired:      o.PageTokenRequired,
		SSL:                    o.SSL,
		CertFile:               o.CertFile,
		KeyFile:                o.KeyFile,
		DatabaseURL:            o.DatabaseURL,
	}
	f.Clients = make([]fileClient, 0, len(o.Clients))
	for _, c := range o.Clients {
		fc := fileClient{Name: c.Name, Scopes: c.Scopes, TokenSHA256: c.TokenSHA256}
		if fc.Scopes == nil {
			fc.Scopes = []Scope{}
		}
		if c.IP.IsValid() {
			fc.IP = c.IP.String()
		}
		f.Clients = append(f.Clients, fc)
	}
	for _, p := range o.ProjectLinks {
		f.ProjectLinks = append(f.ProjectLinks, fileLink{Name: p.Name, Namespaces: nonNil(p.Namespaces)})
	}
	for _, r := range o.NamespaceRenames {
		f.NamespaceRenames = append(f.NamespaceRenames, fileRename(r))
	}
	m := o.OllamaModels
	if len(m.Extraction)+len(m.Review)+len(m.Answer) > 0 {
		f.OllamaModels = &fileChains{Extraction: m.Extraction, Review: m.Review, Answer: m.Answer}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// file is the JSON shape of options.json, in docs/design.md §17 order.
type file struct {
	Clients                []fileClient `json:"clients"`
	GithubOwner            string       `json:"github_owner,omitempty"`
	ForgeHosts             []string     `json:"forge_hosts,omitempty"`
	ForgeOwner             string       `json:"forge_owner,omitempty"`
	ProjectLinks           []fileLink   `json:"project_links,omitempty"`
	Hubs                   []string     `json:"hubs,omitempty"`
	NamespaceRenames       []fileRename `json:"namespace_renames,omitempty"`
	ReviewAt               string       `json:"review_at"`
	CandidateExpiryDays    int          `json:"candidate_expiry_days"`
	SummaryCandidates      bool         `json:"summary_candidates"`
	AnchorSweepHours       int          `json:"anchor_sweep_hours"`
	ContextBudgetTokens    int          `json:"context_budget_tokens"`
	HardContextLimitTokens int          `json:"hard_context_limit_tokens"`
	RetentionDeletedDays   int          `json:"retention_deleted_days"`
	CaptureRetentionDays   int          `json:"capture_retention_days"`
	AuditRetentionDays     int          `json:"audit_retention_days"`
	OllamaURL              string       `json:"ollama_url,omitempty"`
	OllamaFallbackURL      string       `json:"ollama_fallback_url,omitempty"`
	OllamaDirectURLs       []string     `json:"ollama_direct_urls,omitempty"`
	OllamaModel            string       `json:"ollama_model"`
	OllamaModels           *fileChains  `json:"ollama_models,omitempty"`
	OllamaTimeoutS         int64        `json:"ollama_timeout_s"`
	EmbedURL               string       `json:"embed_url,omitempty"`
	EmbedModel             string       `json:"embed_model"`
	EmbedTimeoutS          float64      `json:"embed_timeout_s"`
	EmbedIndexDims         int          `json:"embed_index_dims"`
	RerankURL              string       `json:"rerank_url,omitempty"`
	RerankModel            string       `json:"rerank_model"`
	RerankTimeoutS         float64      `json:"rerank_timeout_s"`
	ModelDailyCalls        int          `json:"model_daily_calls"`
	ModelDailyTokens       int          `json:"model_daily_tokens"`
	MinCoverage            float64      `json:"min_coverage"`
	PageTokenRequired      bool         `json:"page_token_required"`
	SSL                    bool         `json:"ssl"`
	CertFile               string       `json:"certfile"`
	KeyFile                string       `json:"keyfile"`
	DatabaseURL            string       `json:"database_url,omitempty"`
}

type fileClient struct {
	Name        string  `json:"name"`
	Scopes      []Scope `json:"scopes"`
	IP          string  `json:"ip,omitempty"`
	TokenSHA256 string  `json:"token_sha256,omitempty"`
}

type fileLink struct {
	Name       string   `json:"name"`
	Namespaces []string `json:"namespaces"`
}

type fileRename struct {
	From string `json:"from"`
	To   string `json:"to"`
}

type fileChains struct {
	Extraction []string `json:"extraction,omitempty"`
	Review     []string `json:"review,omitempty"`
	Answer     []string `json:"answer,omitempty"`
}
