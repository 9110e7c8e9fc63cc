package options

import (
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hearth-memory/hearth/storage/namespace"
)

// Ranges of the numeric options.
const (
	maxDays              = 3650
	minAnchorSweepHours  = 1
	maxAnchorSweepHours  = 168
	minContextTokens     = 100
	maxHardContextTokens = 100000
	minOllamaTimeoutS    = 1
	maxOllamaTimeoutS    = 3600
	minEmbedTimeout      = time.Millisecond
	maxEmbedTimeout      = 60 * time.Second
	maxModelNameLen      = 256
	maxForgeOwnerLen     = 64
	maxHostLen           = 253
	maxModelDailyCalls   = 1000000
	maxModelDailyTokens  = 1000000000
	// MaxEmbedIndexDims is the longest vector the store takes
	// (storage.MaxEmbeddingDim).
	MaxEmbedIndexDims = 8192
)

var (
	clientNameRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	githubOwnerRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,38}$`)
	tokenHashRE   = regexp.MustCompile(`^[0-9a-f]{64}$`)
	hostLabelRE   = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
)

// Validate reports every invalid option as an *Error naming it (joined with
// errors.Join when there are several). It checks values as Parse leaves
// them, so upper-case letters where Parse lower-cases are refused.
func (o Options) Validate() error {
	var list errs
	o.validateClients(&list)

	if o.GithubOwner != "" && !githubOwnerRE.MatchString(o.GithubOwner) {
		list.add(errorf("github_owner", "must be a GitHub user or organisation name (a-z, 0-9 and '-', at most 39), got %s", show(o.GithubOwner)))
	}
	seen := make(map[string]string)
	for i, h := range o.ForgeHosts {
		path := fmt.Sprintf("forge_hosts[%d]", i)
		if msg := checkHost(h); msg != "" {
			list.add(errorf(path, "%s", msg))
		} else if first, dup := seen[h]; dup {
			list.add(errorf(path, "repeats %s", first))
		} else {
			seen[h] = path
		}
	}
	if o.ForgeOwner != "" {
		if err := namespace.ValidateSegment(o.ForgeOwner); err != nil {
			list.add(errorf("forge_owner", "must be a forge user or organisation name: %v", err))
		} else if len(o.ForgeOwner) > maxForgeOwnerLen {
			list.add(errorf("forge_owner", "is %d characters; at most %d", len(o.ForgeOwner), maxForgeOwnerLen))
		} else if len(o.ForgeHosts) == 0 {
			list.add(errorf("forge_owner", "needs forge_hosts: it narrows the owners on those hosts"))
		}
	}
	o.validateProjectLinks(&list)
	seen = make(map[string]string)
	for i, h := range o.Hubs {
		path := fmt.Sprintf("hubs[%d]", i)
		if err := namespace.Validate(h); err != nil {
			list.add(errorf(path, "must be a namespace: %v", err))
		} else if first, dup := seen[h]; dup {
			list.add(errorf(path, "repeats %s", first))
		} else {
			seen[h] = path
		}
	}
	o.validateRenames(&list)

	r := o.ReviewAt
	if r.Hour < 0 || r.Hour > 23 || r.Minute < 0 || r.Minute > 59 || (r.Off && (r.Hour != 0 || r.Minute != 0)) {
		list.add(errorf("review_at", `must be "HH:MM" (00:00 to 23:59) or "off", got hour %d minute %d off %t`, r.Hour, r.Minute, r.Off))
	}
	checkRange(&list, "candidate_expiry_days", o.CandidateExpiryDays, 0, maxDays)
	checkRange(&list, "anchor_sweep_hours", o.AnchorSweepHours, minAnchorSweepHours, maxAnchorSweepHours)
	checkRange(&list, "hard_context_limit_tokens", o.HardContextLimitTokens, minContextTokens, maxHardContextTokens)
	switch {
	case o.ContextBudgetTokens < minContextTokens:
		list.add(errorf("context_budget_tokens", "must be at least %d, got %d", minContextTokens, o.ContextBudgetTokens))
	case o.ContextBudgetTokens > o.HardContextLimitTokens:
		list.add(errorf("context_budget_tokens", "must be at most hard_context_limit_tokens (%d), got %d", o.HardContextLimitTokens, o.ContextBudgetTokens))
	}
	checkRange(&list, "retention_deleted_days", o.RetentionDeletedDays, 1, maxDays)
	checkRange(&list, "capture_retention_days", o.CaptureRetentionDays, 0, maxDays)
	checkRange(&list, "audit_retention_days", o.AuditRetentionDays, 0, maxDays)
	checkSSLFile(&list, "certfile", o.CertFile)
	checkSSLFile(&list, "keyfile", o.KeyFile)
	checkRange(&list, "model_daily_calls", o.ModelDailyCalls, 0, maxModelDailyCalls)
	checkRange(&list, "embed_index_dims", o.EmbedIndexDims, 0, MaxEmbedIndexDims)
	checkRange(&list, "model_daily_tokens", o.ModelDailyTokens, 0, maxModelDailyTokens)

	checkOptionalURL(&list, "ollama_url", o.OllamaURL)
	checkOptionalURL(&list, "ollama_fallback_url", o.OllamaFallbackURL)
	if o.OllamaFallbackURL != "" && o.OllamaFallbackURL == o.OllamaURL {
		list.add(errorf("ollama_fallback_url", "is the same as ollama_url"))
	}
	seen = make(map[string]string)
	for i, u := range o.OllamaDirectURLs {
		path := fmt.Sprintf("ollama_direct_urls[%d]", i)
		if msg := checkURL(u); msg != "" {
			list.add(errorf(path, "%s", msg))
		} else if first, dup := seen[u]; dup {
			list.add(errorf(path, "repeats %s", first))
		} else {
			seen[u] = path
		}
	}
	checkModel(&list, "ollama_model", o.OllamaModel)
	checkChain(&list, "ollama_models.extraction", o.OllamaModels.Extraction)
	checkChain(&list, "ollama_models.review", o.OllamaModels.Review)
	checkChain(&list, "ollama_models.answer", o.OllamaModels.Answer)
	if t := o.OllamaTimeout; t < minOllamaTimeoutS*time.Second || t > maxOllamaTimeoutS*time.Second || t%time.Second != 0 {
		list.add(errorf("ollama_timeout_s", "must be %d to %d whole seconds, got %v", minOllamaTimeoutS, maxOllamaTimeoutS, t))
	}
	checkOptionalURL(&list, "embed_url", o.EmbedURL)
	checkModel(&list, "embed_model", o.EmbedModel)
	if t := o.EmbedTimeout; t < minEmbedTimeout || t > maxEmbedTimeout {
		list.add(errorf("embed_timeout_s", "must be %g to %g seconds, got %g", minEmbedTimeout.Seconds(), maxEmbedTimeout.Seconds(), t.Seconds()))
	}
	checkOptionalURL(&list, "rerank_url", o.RerankURL)
	checkModel(&list, "rerank_model", o.RerankModel)
	if t := o.RerankTimeout; t < minEmbedTimeout || t > maxEmbedTimeout {
		list.add(errorf("rerank_timeout_s", "must be %g to %g seconds, got %g", minEmbedTimeout.Seconds(), maxEmbedTimeout.Seconds(), t.Seconds()))
	}
	if c := o.MinCoverage; !(c >= 0 && c <= 1) {
		list.add(errorf("min_coverage", "must be 0 to 1, got %g", c))
	}
	if o.DatabaseURL != "" {
		if msg := checkDatabaseURL(o.DatabaseURL); msg != "" {
			list.add(errorf("database_url", "%s", msg))
		}
	}
	return list.err()
}

func (o Options) validateClients(list *errs) {
	if len(o.Clients) == 0 {
		list.add(errorf("clients", "must list at least one client"))
		return
	}
	names := make(map[string]string)
	ips := make(map[netip.Addr]string)
	tokens := make(map[string]string)
	for i, c := range o.Clients {
		path := fmt.Sprintf("clients[%d]", i)
		switch first, dup := names[c.Name]; {
		case c.Name == "":
			list.add(errorf(path+".name", "is required"))
		case !clientNameRE.MatchString(c.Name):
			list.add(errorf(path+".name", "must be 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit, got %s", show(c.Name)))
		case dup:
			list.add(errorf(path+".name", "%s is also the name of %s", show(c.Name), first))
		default:
			names[c.Name] = path
		}
		if len(c.Scopes) == 0 {
			list.add(errorf(path+".scopes", "must list at least one of %s", scopeNames()))
		}
		for j, s := range c.Scopes {
			spath := fmt.Sprintf("%s.scopes[%d]", path, j)
			if !s.Valid() {
				list.add(errorf(spath, "must be one of %s, got %s", scopeNames(), show(string(s))))
			} else if k := indexScope(c.Scopes[:j], s); k >= 0 {
				list.add(errorf(spath, "repeats %s.scopes[%d]", path, k))
			}
		}
		if c.IP.IsValid() {
			switch first, dup := ips[c.IP]; {
			case c.IP.Is4In6():
				list.add(errorf(path+".ip", "must give an IPv4 address as a.b.c.d, got %s", show(c.IP.String())))
			case c.IP.IsUnspecified():
				list.add(errorf(path+".ip", "must be a client's address, got the unspecified address %s", c.IP))
			case dup:
				list.add(errorf(path+".ip", "is also the address of %s", first))
			default:
				ips[c.IP] = path
			}
		}
		if c.TokenSHA256 != "" {
			// The value is never shown: it may be the token itself.
			switch first, dup := tokens[c.TokenSHA256]; {
			case !tokenHashRE.MatchString(c.TokenSHA256):
				list.add(errorf(path+".token_sha256", "must be the SHA-256 of the token as 64 hex digits, got %d characters (give the hash here, never the token)", len(c.TokenSHA256)))
			case dup:
				list.add(errorf(path+".token_sha256", "is also the token hash of %s", first))
			default:
				tokens[c.TokenSHA256] = path
			}
		}
	}
}

func indexScope(list []Scope, s Scope) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

func (o Options) validateProjectLinks(list *errs) {
	names := make(map[string]string)
	for i, p := range o.ProjectLinks {
		path := fmt.Sprintf("project_links[%d]", i)
		if err := namespace.ValidateSegment(p.Name); err != nil {
			list.add(errorf(path+".name", "must be a project name: %v", err))
		} else if err := namespace.Validate(p.Namespace()); err != nil {
			list.add(errorf(path+".name", "must make a valid namespace: %v", err))
		} else if first, dup := names[p.Name]; dup {
			list.add(errorf(path+".name", "%s is also the name of %s", show(p.Name), first))
		} else {
			names[p.Name] = path
		}
		if len(p.Namespaces) == 0 {
			list.add(errorf(path+".namespaces", "must list at least one repository namespace"))
		}
		seen := make(map[string]string)
		for j, ns := range p.Namespaces {
			npath := fmt.Sprintf("%s.namespaces[%d]", path, j)
			if err := namespace.Validate(ns); err != nil {
				list.add(errorf(npath, "must be a namespace: %v", err))
			} else if kind, _, _ := strings.Cut(ns, "/"); kind != "github" && kind != "gitea" && kind != "local" {
				list.add(errorf(npath, "must be a repository namespace (github/…, gitea/… or local/…), got %s", show(ns)))
			} else if first, dup := seen[ns]; dup {
				list.add(errorf(npath, "repeats %s", first))
			} else {
				seen[ns] = npath
			}
		}
	}
}

func (o Options) validateRenames(list *errs) {
	froms := make(map[string]string)
	tos := make(map[string]string)
	for i, r := range o.NamespaceRenames {
		path := fmt.Sprintf("namespace_renames[%d]", i)
		fromOK := checkOwnerPrefix(list, path+".from", r.From)
		toOK := checkOwnerPrefix(list, path+".to", r.To)
		if !fromOK || !toOK {
			continue
		}
		if r.From == r.To {
			list.add(errorf(path, "from and to are both %s", show(r.From)))
			continue
		}
		if first, dup := froms[r.From]; dup {
			list.add(errorf(path+".from", "repeats %s.from", first))
			continue
		}
		froms[r.From] = path
		tos[r.To] = path
	}
	// All renames apply at once, so a chain a→b, b→c is ambiguous.
	for i, r := range o.NamespaceRenames {
		path := fmt.Sprintf("namespace_renames[%d]", i)
		if first, ok := tos[r.From]; ok && froms[r.From] == path {
			list.add(errorf(path+".from", "%s is the to of %s; renames do not chain: rename straight to the last owner", show(r.From), first))
		}
	}
}

func checkOwnerPrefix(list *errs, path, s string) bool {
	kind, owner, ok := strings.Cut(s, "/")
	if s == "" {
		list.add(errorf(path, "is required"))
		return false
	}
	if !ok || (kind != "github" && kind != "gitea") || strings.Contains(owner, "/") {
		list.add(errorf(path, "must be an owner prefix, github/<owner> or gitea/<owner>, got %s", show(s)))
		return false
	}
	if err := namespace.ValidateSegment(owner); err != nil {
		list.add(errorf(path, "must be an owner prefix: owner %v", err))
		return false
	}
	return true
}

func checkRange(list *errs, option string, n, lo, hi int) {
	if n < lo || n > hi {
		list.add(rangeError(option, lo, hi, n))
	}
}

func rangeError(option string, lo, hi, n int) *Error {
	return errorf(option, "must be %d to %d, got %d", lo, hi, n)
}

func checkOptionalURL(list *errs, option, s string) {
	if s == "" {
		return
	}
	if msg := checkURL(s); msg != "" {
		list.add(errorf(option, "%s", msg))
	}
}

// checkURL returns why s is not a model server's base URL, or "". The
// message never repeats s: a URL may carry a password.
func checkURL(s string) string {
	const want = "must be an absolute http or https URL such as http://host:11434"
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
		return "must not hold spaces or control characters"
	}
	u, err := url.Parse(s)
	if err != nil {
		return want
	}
	switch {
	case u.User != nil || strings.Contains(u.Host, "@"):
		return "must not carry a user name or password"
	case u.Scheme != "http" && u.Scheme != "https":
		return want
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return want
	case u.RawQuery != "" || u.ForceQuery || strings.Contains(s, "#"):
		return "must not carry a query or fragment"
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "must have a port from 1 to 65535"
		}
	}
	if strings.HasSuffix(s, "/") {
		return "must not end in '/'"
	}
	return ""
}

// checkHost returns why s is not a forge host (host or host:port), or "".
func checkHost(s string) string {
	want := fmt.Sprintf("must be a host name or host:port, lower case, got %s", show(s))
	if strings.Contains(s, "://") || strings.Contains(s, "/") {
		return "must be a host name or host:port, not a URL"
	}
	if s == "" || len(s) > maxHostLen+6 {
		return want
	}
	host, port := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return want
		}
		host, port = s[1:end], s[end+1:]
		if port != "" {
			if port[0] != ':' {
				return want
			}
			port = port[1:]
			if port == "" {
				return want
			}
		}
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.Is6() || ip.Zone() != "" || ip.String() != host {
			return want
		}
	} else {
		if i := strings.LastIndexByte(s, ':'); i >= 0 {
			host, port = s[:i], s[i+1:]
			if port == "" {
				return want
			}
		}
		if strings.Contains(host, ":") {
			return "must write an IPv6 address in brackets, as [::1]:3000"
		}
		if _, err := netip.ParseAddr(host); err != nil && !isHostName(host) {
			return want
		}
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || port[0] == '0' || port[0] == '+' {
			return fmt.Sprintf("must have a port from 1 to 65535, got %s", show(port))
		}
	}
	return ""
}

func isHostName(h string) bool {
	if h == "" || len(h) > maxHostLen {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if !hostLabelRE.MatchString(label) {
			return false
		}
	}
	return true
}

func checkModel(list *errs, path, s string) {
	switch {
	case s == "":
		list.add(errorf(path, "must name a model"))
	case len(s) > maxModelNameLen:
		list.add(errorf(path, "is %d bytes; at most %d", len(s), maxModelNameLen))
	case !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0:
		list.add(errorf(path, "must be a model name without spaces or control characters, got %s", show(s)))
	}
}

func checkChain(list *errs, path string, chain []string) {
	seen := make(map[string]string)
	for i, m := range chain {
		p := fmt.Sprintf("%s[%d]", path, i)
		n := len(*list)
		checkModel(list, p, m)
		if len(*list) != n {
			continue
		}
		if first, dup := seen[m]; dup {
			list.add(errorf(p, "repeats %s", first))
		} else {
			seen[m] = p
		}
	}
}

// checkSSLFile holds certfile and keyfile to a file name in the /ssl
// folder: no directory, never "." or "..".
func checkSSLFile(list *errs, name, v string) {
	if v == "" || v == "." || v == ".." || strings.ContainsAny(v, "/\\") || strings.ContainsFunc(v, unicode.IsControl) {
		list.add(errorf(name, "must be a file name in the /ssl folder, such as fullchain.pem, got %q", v))
	}
}
