package screen

import (
	"regexp"
	"strings"
)

// Pattern names. They are part of the API: errors, the audit and
// "[screened:<name>]" placeholders carry them.
const (
	patMarker      = "no-store-marker"
	patPrivateKey  = "private-key"
	patAnthropic   = "anthropic-key"
	patOpenAI      = "openai-key"
	patGitHub      = "github-token"
	patGitLab      = "gitlab-token"
	patSlack       = "slack-token"
	patSlackHook   = "slack-webhook"
	patAWSAccess   = "aws-access-key"
	patAWSSecret   = "aws-secret-key"
	patGoogle      = "google-api-key"
	patNPM         = "npm-token"
	patHearth      = "hearth-token"
	patStripe      = "stripe-key"
	patJWT         = "jwt"
	patURLUserinfo = "url-userinfo"
	patProvider    = "provider-token"
	patDriverDSN   = "driver-dsn"
	patConnString  = "connection-string"
	patPgpass      = "pgpass-password"
	patNetrc       = "netrc-password"
	patCLI         = "cli-password"
	patAssignment  = "credential-assignment"
	patProse       = "credential-in-prose"
	patURLParam    = "url-credential-param" // Anchor only; see screenURL
)

// A pattern is one named shape of secret.
type pattern struct {
	name string
	// find returns the span of the first secret in t.s, or start < 0. It
	// must be cheap on text without any hint of its secret: the screen runs
	// on every persisted string.
	find func(t *text) (start, end int)
	// findNamed, set instead of find, names its hit itself: the upstream
	// table reports the name its rule maps to.
	findNamed func(t *text) match
}

// text is a value being screened, with what one pass over it found (see
// hints.go).
type text struct {
	s     string
	ascii bool      // s is all ASCII
	lits  uint64    // bit i is set when literals[i] may occur in s
	fired [4]uint64 // bit i is set when upstream rule i has a keyword in s
	cli   []hint    // command names (cli.go)
	prose []int     // ends of credential stems (prose.go)
	netrc []hint    // machine and default (findNetrc)

	cliBuf   [8]hint
	proseBuf [16]int
	netrcBuf [4]hint
}

// literals are the literal prefixes of every reFind expression; hints.go
// finds which of them occur, ignoring case, in its one pass. literalExprs
// are the expressions, in the same order.
var literals, literalExprs []string

func newText(s string) *text {
	prepare()
	t := &text{s: s}
	t.scanHints()
	return t
}

// patterns is the screen, checked in order; the first hit names the refusal,
// so specific shapes come before the generic credential-assignment.
var patterns = []pattern{
	{
		// The do-not-store marker, any case, anywhere (R-S4). Prose such as
		// "do not store secrets" has no hyphens and passes.
		name: patMarker,
		find: func(t *text) (int, int) { return findMarker(t.s) },
	},
	{
		// A PEM or OpenSSH private key: a "BEGIN … PRIVATE KEY" header, optional
		// PEM headers (Proc-Type, DEK-Info, Version), then base64 key material.
		// Line breaks may be real or JSON-escaped (\n), as in a service-account
		// file. "BEGIN CERTIFICATE", "BEGIN PUBLIC KEY", ssh-ed25519 public keys
		// and a header with elided material ("...") don't match.
		name: patPrivateKey,
		find: reFind(false, nil,
			`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:\s|\\[nr])*(?:[A-Za-z-]+: ?[^\n\\]*(?:\s|\\[nr])+)*([A-Za-z0-9+/=]{16})`,
			`---- BEGIN SSH2 (?:ENCRYPTED )?PRIVATE KEY ----(?:\s|\\[nr])*(?:[A-Za-z-]+: ?[^\n\\]*(?:\s|\\[nr])+)*([A-Za-z0-9+/=]{16})`,
			`PuTTY-User-Key-File-[0-9]: (?s:.){0,1000}?Private-Lines: [0-9]{1,3}(?:\s|\\[nr])+([A-Za-z0-9+/=]{16})`),
	},
	{
		// Anthropic API and admin keys: sk-ant-api03-…. Before openai-key, whose
		// sk- shape also covers it.
		name: patAnthropic,
		find: reFind(true, notDummy, `sk-ant-[a-z]{2,8}[0-9]{2}-[A-Za-z0-9_-]{20,300}`),
	},
	{
		// OpenAI keys: sk-…, sk-proj-…, sk-svcacct-…, sk-admin-…. The body must
		// mix upper-case, lower-case and digits, so words after "sk-"
		// (sk-learn-model-selection, the SSH key type sk-ecdsa-sha2-nistp256)
		// pass, and so does "task-…" (no word boundary before sk).
		name: patOpenAI,
		find: reFind(true, mixedBody, `sk-(?:proj-|svcacct-|admin-|None-)?([A-Za-z0-9_-]{20,300})`),
	},
	{
		// GitHub tokens: ghp_, gho_, ghu_, ghs_, ghr_ and fine-grained
		// github_pat_. "ghp is a prefix" and "ghp_" alone are too short.
		name: patGitHub,
		find: reFind(true, notDummy,
			`ghp_[A-Za-z0-9]{36,251}\b`, `gho_[A-Za-z0-9]{36,251}\b`, `ghu_[A-Za-z0-9]{36,251}\b`,
			`ghs_[A-Za-z0-9]{36,251}\b`, `ghr_[A-Za-z0-9]{36,251}\b`, `github_pat_[A-Za-z0-9_]{50,255}\b`),
	},
	{
		// GitLab personal access tokens: glpat-….
		name: patGitLab,
		find: reFind(true, notDummy, `glpat-([A-Za-z0-9_-]{20,100})`),
	},
	{
		// Slack bot, user, app and refresh tokens: xoxb-, xoxp-, xoxa-, xoxe-,
		// xoxr-, xoxs-, xoxo-, xapp-. The body must hold digits (team and app
		// ids), so "xoxb-your-token-here" passes.
		name: patSlack,
		find: reFind(true, randomBody, `xox[abeoprs]-([A-Za-z0-9-]{10,300})`, `xapp-[0-9]+-([A-Za-z0-9-]{10,300})`),
	},
	{
		// Slack incoming-webhook and workflow URLs, which post without any
		// other credential. Slack's documented T00000000/B00000000/XXXX… passes.
		name: patSlackHook,
		find: reFind(false, randomBody, `https://hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9_/-]{20,300})`),
	},
	{
		// AWS access key ids: AKIA (long-term), ASIA (temporary), ABIA, ACCA,
		// A3T… followed by 16 upper-case base32 characters. AWS's documented
		// AKIAIOSFODNN7EXAMPLE passes as a dummy.
		name: patAWSAccess,
		find: reFind(true, notDummy, `AKIA[A-Z0-9]{16}\b`, `ASIA[A-Z0-9]{16}\b`, `ABIA[A-Z0-9]{16}\b`, `ACCA[A-Z0-9]{16}\b`, `A3T[A-Z0-9]{17}\b`),
	},
	{
		// AWS secret access keys: 40 base64 characters have no shape of their
		// own (a SHA-1 is 40 hex characters), so they are caught only when
		// assigned to a name with secret and aws or access in it:
		// aws_secret_access_key, SecretAccessKey, AWS_SECRET_KEY…. AWS's
		// documented wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY passes.
		name: patAWSSecret,
		find: func(t *text) (int, int) {
			s := t.s
			if !strings.Contains(s, "ecret") && !strings.Contains(s, "ECRET") {
				return -1, -1 // no secret, Secret or SECRET: nothing to name
			}
			return eachAssignment(s, awsSecretName, func(v string, _ assignment) bool {
				return awsSecretRE().MatchString(v) && notDummy(v)
			})
		},
	},
	{
		// Google API keys: AIza followed by 35 base64url characters.
		name: patGoogle,
		find: reFind(true, notDummy, `AIza[0-9A-Za-z_-]{35}`),
	},
	{
		// npm access tokens: npm_ followed by 36 alphanumerics.
		name: patNPM,
		find: reFind(true, randomBody, `npm_([A-Za-z0-9]{36})\b`),
	},
	{
		// Hearth's own client tokens: hearth_ followed by 32 random bytes in
		// base64url (43 characters), as the server generates them.
		name: patHearth,
		find: reFind(true, nil, `hearth_[A-Za-z0-9_-]{43}`),
	},
	{
		// Stripe secret and restricted keys, live and test mode. Publishable
		// keys (pk_live_…) are public and pass.
		name: patStripe,
		find: reFind(true, randomBody, `sk_(?:live|test)_([A-Za-z0-9]{16,200})`, `rk_(?:live|test)_([A-Za-z0-9]{16,200})`),
	},
	{
		// JSON Web Tokens: base64url("{…") "." base64url("{…") "." signature
		// (possibly empty, alg "none"). "eyJ" is base64 for `{"`.
		name: patJWT,
		find: reFind(false, nil, `eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`),
	},
	{
		// Every other rule of gitleaks' default set (upstream.go), named
		// provider-token unless the screen already names its provider.
		name:      patProvider,
		findNamed: findUpstream,
	},
	{
		// A password in a URL's userinfo: scheme://user:pass@host, with the
		// placeholder rule applied to pass, so postgres://postgres:postgres@…,
		// https://user:${TOKEN}@… and ssh://git@host pass in text. (Anchor is
		// stricter: any userinfo in a url: anchor is refused.)
		name: patURLUserinfo,
		find: func(t *text) (int, int) { return findURLPassword(t.s) },
	},
	{
		// A database driver DSN that is not a URL: user:pass@tcp(host)/db,
		// user/pass@//host/service.
		name: patDriverDSN,
		find: func(t *text) (int, int) { return findDriverDSN(t.s) },
	},
	{
		// A key=value;… connection string with Password=, Pwd=,
		// AccountKey= or SharedAccessKey=. Before credential-assignment,
		// which would also catch most of them under a vaguer name.
		name: patConnString,
		find: func(t *text) (int, int) { return findConnString(t.s) },
	},
	{
		// A .pgpass line: host:port:db:user:password.
		name: patPgpass,
		find: func(t *text) (int, int) { return findPgpass(t.s) },
	},
	{
		// A .netrc entry: machine host login user password pw.
		name: patNetrc,
		find: findNetrc,
	},
	{
		// A password flag of a known command: mysql -p<pw>, sshpass -p
		// <pw>, curl -u user:<pw>, openssl -passin pass:<pw>…; see cli.go.
		name: patCLI,
		find: findCLIPassword,
	},
	{
		// A credential-named key assigned a real-looking value, in env, shell,
		// YAML, JSON, TOML, INI, code, HTTP headers and --flag form; see
		// eachAssignment, and the name and placeholder rules in
		// docs/screen.md.
		name: patAssignment,
		find: func(t *text) (int, int) { return findAssignment(t.s) },
	},
	{
		// A secret stated in prose: "the prod secret key is 9dK2v…",
		// "use password Xq7!… for the admin"; see findProse.
		name: patProse,
		find: findProse,
	},
}

// awsSecretRE is the whole value of an AWS secret access key.
var awsSecretRE = lazyRegexp(`^[A-Za-z0-9/+]{40}$`)

// awsSecretName accepts aws_secret_access_key, SecretAccessKey,
// AWS_SECRET_KEY, aws_secret.
func awsSecretName(key string, _ bool) bool {
	var secret, aws, access bool
	for _, w := range splitWords(key) {
		switch w {
		case "secret":
			secret = true
		case "aws":
			aws = true
		case "access":
			access = true
		case "secretaccesskey":
			return true
		}
	}
	return secret && (aws || access)
}

// reFind makes exprs into one finder. Every expression must start with a
// literal of two bytes or more, which newText looks for and regexp uses to
// jump between candidates, so text without any hint costs one pass; an
// expression is compiled when its literal first occurs (lazyRegexp). The secret span is submatch 1 when the expression has
// one, else the whole match. With boundary set, a match must not follow a
// letter, digit or _ (a leading \b would cost the literal-prefix speed-up).
// With real set, a match whose span it rejects (a placeholder) is skipped.
// Bounded repetitions keep a retry after a rejection short, and maxRetries
// bounds their number.
func reFind(boundary bool, real func(string) bool, exprs ...string) func(*text) (int, int) {
	type lit struct {
		id     int
		prefix string
		re     func() *regexp.Regexp
	}
	var rs []lit
	for _, e := range exprs {
		p := literalPrefix(e)
		if len(p) < 2 {
			panic("screen: pattern without a literal prefix: " + e)
		}
		rs = append(rs, lit{len(literals), p, lazyRegexp(e)})
		literals = append(literals, p)
		literalExprs = append(literalExprs, e)
	}
	return func(t *text) (int, int) {
		s := t.s
		for _, r := range rs {
			if t.lits&(1<<r.id) == 0 {
				continue
			}
			pos, retries := strings.Index(s, r.prefix), 0
			for pos >= 0 && pos < len(s) {
				m := r.re().FindStringSubmatchIndex(s[pos:])
				if m == nil {
					break
				}
				start, ss, se := pos+m[0], pos+m[0], pos+m[1]
				if len(m) >= 4 && m[2] >= 0 {
					ss, se = pos+m[2], pos+m[3]
				}
				if (!boundary || start == 0 || !isWordByte(s[start-1])) && (real == nil || real(s[ss:se])) {
					return ss, se
				}
				// Retry inside the rejected match (xoxb-your-xoxb-123…), but
				// only so often: then go on past it, which keeps hostile
				// input (1 MiB of "sk-") linear.
				if retries++; retries <= maxRetries {
					pos = start + 1
				} else {
					pos = max(start+1, pos+m[1])
				}
			}
		}
		return -1, -1
	}
}

// maxRetries bounds the retries inside rejected matches per expression and
// value.
const maxRetries = 100

func isWordByte(c byte) bool { return isAlnum(c) || c == '_' }

// findMarker finds "do-not-store" in any case. It jumps between hyphens,
// which are rarer in prose than the marker's letters.
func findMarker(s string) (int, int) {
	const marker = "do-not-store"
	for i := 2; i+len(marker)-2 <= len(s); i++ {
		j := strings.IndexByte(s[i:], '-')
		if j < 0 {
			break
		}
		i += j
		if i >= 2 && i-2+len(marker) <= len(s) && indexFold(s[i-2:i-2+len(marker)], marker) == 0 {
			return i - 2, i - 2 + len(marker)
		}
	}
	return -1, -1
}

// indexFold is strings.Index for an ASCII lower-case sub, ignoring ASCII case
// in s, without allocating.
func indexFold(s, sub string) int {
	n := len(sub)
	if n == 0 {
		return 0
	}
	c0, u0 := sub[0], upper(sub[0])
	for i := 0; i+n <= len(s); i++ {
		if c := s[i]; c != c0 && c != u0 {
			continue
		}
		j := 1
		for ; j < n; j++ {
			if lower(s[i+j]) != sub[j] {
				break
			}
		}
		if j == n {
			return i
		}
	}
	return -1
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isAlpha(c byte) bool { return isLower(c) || isUpper(c) }
func isAlnum(c byte) bool { return isAlpha(c) || isDigit(c) }
