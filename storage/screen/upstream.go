package screen

//go:generate go -C ../../tools/gitleaksgen run . -o ../../storage/screen/upstream_rules.go

import (
	"math"
	"math/bits"
	"regexp"
	"strings"
	"sync"
)

// An upstreamRule is one rule of gitleaks' default config, as
// tools/gitleaksgen copies it into upstream_rules.go.
type upstreamRule struct {
	id          string
	regex       string
	path        string // a rule with a path applies only to files
	secretGroup int
	entropy     float64
	keywords    []string // lower case; the rule runs only when one occurs
	allowlists  []upstreamAllowlist
}

// An upstreamAllowlist exempts a finding whose secret (or match, or line)
// matches one of its regexes or holds one of its stopwords; with and set,
// both must hold, and an and list that names paths or commits never
// applies to a screened value, which has neither.
type upstreamAllowlist struct {
	and       bool
	needsPath bool
	target    string // "", "match" or "line"
	regexes   []string
	stopwords []string
}

// upstreamExcluded are the upstream rules the screen does not run, with the
// reason; docs/screen.md lists them.
var upstreamExcluded = map[string]string{
	"generic-api-key":          "credential-assignment and credential-in-prose cover keyword-anchored values with the placeholder rule; this rule refused benign look-alikes (pageToken=…, next_token: …)",
	"jwt":                      "its keyword ey occurs in most English text (key, they), so it would run on nearly every write; the jwt pattern covers JSON Web Tokens",
	"curl-auth-header":         "it reaches up to five lines past curl without bound, so it scans the whole value whenever curl occurs; credential-assignment covers the header",
	"curl-auth-user":           "it reaches up to five lines past curl without bound, so it scans the whole value whenever curl occurs; cli-password covers curl -u user:password",
	"sourcegraph-access-token": "one of its forms is any 40 hex digits, so a note that names Sourcegraph and a git commit id is refused; credential-assignment covers an assigned token",
}

// upstreamName maps an upstream rule id onto the screen's stable pattern
// name: a provider the screen already names keeps its name, every other
// rule is provider-token. docs/screen.md lists the mapping.
func upstreamName(id string) string {
	switch {
	case strings.HasPrefix(id, "anthropic-"):
		return patAnthropic
	case id == "openai-api-key":
		return patOpenAI
	case strings.HasPrefix(id, "github-"):
		return patGitHub
	case strings.HasPrefix(id, "gitlab-"):
		return patGitLab
	case id == "slack-webhook-url":
		return patSlackHook
	case strings.HasPrefix(id, "slack-"):
		return patSlack
	case id == "aws-access-token":
		return patAWSAccess
	case id == "gcp-api-key":
		return patGoogle
	case id == "npm-access-token":
		return patNPM
	case id == "stripe-access-token":
		return patStripe
	case id == "private-key":
		return patPrivateKey
	case id == "jwt" || id == "jwt-base64":
		return patJWT
	}
	return patProvider
}

// upstream is the table of the rules the screen runs (hints.go finds their
// keywords); prepare builds it.
var upstream struct {
	rules []*liveRule
}

// upstreamGlobalAllow is gitleaks' global allowlist, compiled when a rule
// first finds a candidate.
var upstreamGlobalAllow = sync.OnceValue(func() []liveAllowlist { return compileAllowlists(upstreamGlobal) })

// A liveRule is an upstreamRule ready to run. Its expressions are compiled
// on first use, so rules that never fire cost no memory.
type liveRule struct {
	upstreamRule
	name    string
	once    sync.Once
	re      *regexp.Regexp // the whole expression
	plan    plan
	planned bool
	at      *regexp.Regexp // \A(?:core): the core anchored at the value's start
	atCtx   *regexp.Regexp // \A(?s:.)(?:core): the same after one character of context
	allw    []liveAllowlist
}

type liveAllowlist struct {
	upstreamAllowlist
	re *regexp.Regexp // the regexes joined, or nil
}

// prepare builds the rule table and the keyword automaton (hints.go) on
// the first screening, not at package init: a process that never screens
// (hearth --version, most commands) never pays for them. newText calls it.
var prepare = sync.OnceFunc(func() {
	starts := map[string][]int{}
	for _, r := range upstreamRules {
		if _, skip := upstreamExcluded[r.id]; skip || r.path != "" || r.regex == "" {
			continue
		}
		if len(r.keywords) == 0 {
			panic("screen: upstream rule without keywords would run on every value: " + r.id)
		}
		upstream.rules = append(upstream.rules, &liveRule{upstreamRule: r, name: upstreamName(r.id)})
		for _, k := range r.keywords {
			starts[k] = append(starts[k], len(upstream.rules)-1)
		}
	}
	if len(upstream.rules) > len(text{}.fired)*64 {
		panic("screen: too many upstream rules")
	}
	buildHints(starts)
})

func (r *liveRule) compile() {
	r.once.Do(func() {
		r.re = regexp.MustCompile(r.regex)
		if r.plan, r.planned = planRule(r.regex); r.planned {
			r.at = regexp.MustCompile(`\A(?:` + r.plan.core + `)`)
			r.atCtx = regexp.MustCompile(`\A(?s:.)(?:` + r.plan.core + `)`)
		}
		r.allw = compileAllowlists(r.allowlists)
	})
}

func compileAllowlists(as []upstreamAllowlist) []liveAllowlist {
	out := make([]liveAllowlist, len(as))
	for i, a := range as {
		out[i].upstreamAllowlist = a
		if len(a.regexes) > 0 {
			out[i].re = regexp.MustCompile(strings.Join(a.regexes, "|"))
		}
	}
	return out
}

// findUpstream runs the upstream rules whose keywords occur in t.s, in
// table order, and returns the first finding that passes their entropy
// and allowlists and is not a placeholder.
func findUpstream(t *text) match {
	s := t.s
	// Under (?i), k and s also match the Kelvin sign and the long s, which
	// the ASCII search for anchors does not find: then run on the whole
	// value.
	anchored := t.ascii || !strings.Contains(s, "\u212a") && !strings.Contains(s, "\u017f")
	for w, b := range t.fired {
		for ; b != 0; b &= b - 1 {
			r := upstream.rules[w*64+bits.TrailingZeros64(b)]
			if m := r.find(s, anchored); m.start >= 0 {
				return m
			}
		}
	}
	return noMatch
}

// find runs one rule over s: anchored at its anchor's occurrences when it
// has a plan, else on the whole value as gitleaks does.
func (r *liveRule) find(s string, anchored bool) match {
	r.compile()
	if !anchored || !r.planned {
		for _, m := range r.re.FindAllStringSubmatchIndex(s, -1) {
			if h := r.judge(s, m); h.start >= 0 {
				return h
			}
		}
		return noMatch
	}
	a := &r.plan.anc
	for _, l := range a.lits {
		for i := 0; i < len(s); {
			var j int
			if l.fold {
				j = indexFold(s[i:], l.s)
			} else {
				j = strings.Index(s[i:], l.s)
			}
			if j < 0 {
				break
			}
			p := i + j
			i = p + 1
			if !l.fits(s, p+len(l.s)) {
				continue // what follows cannot continue a match
			}
			for off := a.minOff; off <= a.maxOff && off <= p; off++ {
				q := p - off
				if r.plan.wordStart && q > 0 && isWordByte(s[q-1]) {
					continue // \b cannot hold at q
				}
				if m := r.attempt(s, q); m.start >= 0 {
					return m
				}
			}
		}
	}
	return noMatch
}

// fits reports whether s[e:], right after an occurrence of l, can continue
// a match: its first byte may follow l, and the run after l is there.
func (l *anchorLit) fits(s string, e int) bool {
	if e < len(s) && !l.follow.has(s[e]) {
		return false
	}
	if l.run > 0 {
		if e+l.run > len(s) {
			return false
		}
		for i := e; i < e+l.run; i++ {
			if !l.runSet.has(s[i]) {
				return false
			}
		}
	}
	return true
}

// attempt runs the rule's core anchored at s[q:]. The character before q
// is matched as context, so \b sees what it sees in s; the value is cut
// one byte past the longest match, so $ cannot match at the cut.
func (r *liveRule) attempt(s string, q int) match {
	hi := len(s)
	if r.plan.span >= 0 {
		hi = min(hi, q+r.plan.span+1)
	}
	var m []int
	base := q
	if q == 0 {
		m = r.at.FindStringSubmatchIndex(s[:hi])
	} else {
		base = q - 1
		m = r.atCtx.FindStringSubmatchIndex(s[base:hi])
	}
	if m == nil {
		return noMatch
	}
	for i := range m {
		if m[i] >= 0 {
			m[i] += base
		}
	}
	m[0] = q
	return r.judge(s, m)
}

// judge applies gitleaks' tests to one match (a submatch index into s):
// the secret is the rule's secret group (or the first non-empty group, or
// the match), its entropy must exceed the rule's, and no allowlist may
// exempt it. The screen's own placeholder test comes last.
func (r *liveRule) judge(s string, m []int) match {
	// gitleaks drops line breaks from the ends of a match.
	for m[1] > m[0] && s[m[1]-1] == '\n' {
		m[1]--
	}
	for m[0] < m[1] && s[m[0]] == '\n' {
		m[0]++
	}
	ss, se := secretSpan(m, r.secretGroup)
	secret := s[ss:se]
	if ss < se && (r.entropy == 0 || shannon(secret) > r.entropy) &&
		!allowed(upstreamGlobalAllow(), s, secret, m[0], m[1]) && !allowed(r.allw, s, secret, m[0], m[1]) &&
		notDummy(secret) {
		return match{pattern: r.name, rule: r.id, start: ss, end: se}
	}
	return noMatch
}

// secretSpan picks the secret's span out of a submatch index.
func secretSpan(m []int, group int) (int, int) {
	if group > 0 {
		if 2*group+1 < len(m) && m[2*group] >= 0 {
			return max(m[0], m[2*group]), min(m[1], m[2*group+1])
		}
		return m[0], m[1]
	}
	for g := 1; 2*g+1 < len(m); g++ {
		if m[2*g] >= 0 && m[2*g+1] > m[2*g] {
			return max(m[0], m[2*g]), min(m[1], m[2*g+1])
		}
	}
	return m[0], m[1]
}

// allowed reports whether an allowlist exempts the finding; see
// upstreamAllowlist.
func allowed(as []liveAllowlist, s, secret string, start, end int) bool {
	for i := range as {
		a := &as[i]
		target := secret
		switch a.target {
		case "match":
			target = s[start:end]
		case "line":
			lo := strings.LastIndexByte(s[:start], '\n') + 1
			hi := strings.IndexByte(s[end:], '\n')
			if hi < 0 {
				hi = len(s)
			} else {
				hi += end
			}
			target = s[lo:hi]
		}
		re := a.re != nil && target != "" && a.re.MatchString(target)
		stop := false
		if len(a.stopwords) > 0 {
			lower := strings.ToLower(secret)
			for _, w := range a.stopwords {
				if strings.Contains(lower, w) {
					stop = true
					break
				}
			}
		}
		if a.and {
			if !a.needsPath && (a.re == nil || re) && (len(a.stopwords) == 0 || stop) && (a.re != nil || len(a.stopwords) > 0) {
				return true
			}
			continue
		}
		if re || stop {
			return true
		}
	}
	return false
}

// shannon is gitleaks' entropy: over the runes of data, normalised by its
// length in bytes.
func shannon(data string) float64 {
	if data == "" {
		return 0
	}
	var counts map[rune]int
	var ascii [128]int
	for _, c := range data {
		if c < 128 {
			ascii[c]++
			continue
		}
		if counts == nil {
			counts = map[rune]int{}
		}
		counts[c]++
	}
	inv := 1 / float64(len(data))
	e := 0.0
	add := func(n int) {
		if n > 0 {
			f := float64(n) * inv
			e -= f * math.Log2(f)
		}
	}
	for _, n := range ascii {
		add(n)
	}
	for _, n := range counts {
		add(n)
	}
	return e
}
