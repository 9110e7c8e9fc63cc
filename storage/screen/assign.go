package screen

import "strings"

// maxKey and maxValue bound how far the assignment scanner looks around a
// separator, which keeps the scan linear on hostile input.
const (
	maxKey   = 64
	maxValue = 256
)

// findAssignment finds a credential assignment with a real-looking value
// and returns the value's span; see eachAssignment.
func findAssignment(s string) (int, int) {
	credential := func(key string, inURL bool) bool { return hasStem(key) && credentialName(key, inURL) }
	if start, end := eachAssignment(s, credential, assignedValue); start >= 0 {
		return start, end
	}
	if start, end := findXMLElement(s); start >= 0 {
		return start, end
	}
	return findFlag(s)
}

// findXMLElement finds an XML element named as a credential, such as
// Maven's <password>…</password>, and returns its text's span.
func findXMLElement(s string) (int, int) {
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], "</")
		if j < 0 {
			break
		}
		c := i + j // the closing tag
		i = c + 2
		k := i
		for k < len(s) && k-i <= maxKey && (isKeyByte(s[k]) || s[k] == ':') {
			k++
		}
		if k == i || k >= len(s) || s[k] != '>' {
			continue
		}
		name := s[i:k]
		if !hasStem(name) || !credentialName(name, false) {
			continue
		}
		// The opening tag, <name> or <name attr…>, before it.
		lo := max(0, c-maxValue-len(name)-64)
		o := strings.LastIndex(s[lo:c], "<"+name)
		if o < 0 {
			continue
		}
		o += lo
		gt := strings.IndexByte(s[o:c], '>')
		if gt < 0 || s[o+gt-1] == '/' {
			continue
		}
		start, end := o+gt+1, c
		for start < end && isBlank(s[start]) {
			start++
		}
		for end > start && isBlank(s[end-1]) {
			end--
		}
		if strictValue(s[start:end], noCode) {
			return start, end
		}
	}
	return -1, -1
}

// assignedValue judges the value of a credential-named assignment: by the
// strict rule (strictValue), but for an unquoted value after ": " that more
// words follow on its line ("Password: the account uses SSO"), which is
// prose and judged by the placeholder rule (realValue). The value of an
// environment-style key (DB_PASSWORD, all capitals) is a literal, never
// code.
func assignedValue(v string, a assignment) bool {
	switch {
	case a.prose || a.inURL:
		return realValue(v, a.code)
	case !a.code:
		return strictValue(v, noCode)
	case envKey(a.key):
		return strictValue(v, exprCode)
	}
	return strictValue(v, shapedCode)
}

// envKey reports whether key is written as an environment variable:
// capitals, digits and underscores (DB_PASSWORD, PGPASSWORD).
func envKey(key string) bool {
	upper := false
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case isUpper(c):
			upper = true
		case isDigit(c) || c == '_':
		default:
			return false
		}
	}
	return upper
}

// assignment is what eachAssignment knows of a value besides its text: its
// key, whether it is unquoted (code), whether it is the first word of prose
// after "key: " (prose) and whether the key is a parameter of a URL in the
// text (inURL; url-credential-param judges those in anchors).
type assignment struct {
	key                string
	code, prose, inURL bool
}

// eachAssignment returns the span of the first value assigned to a key that
// isKey accepts and that isValue accepts, or -1, -1. It walks the separators
// = : := => == in s; for each it reads the key before it (optionally quoted,
// e.g. "api_key": or 'password' =>; a one-word key may take the word before
// it, as in "API key: …"), then reads the value (quoted, unquoted, or after
// an HTTP auth scheme such as Bearer). isKey's inURL argument is set for a
// key that follows ? or & (a query parameter in a URL in the text);
// isValue's code argument is set for unquoted values.
func eachAssignment(s string, isKey func(key string, inURL bool) bool, isValue func(v string, a assignment) bool) (int, int) {
	for i := 0; i < len(s); {
		j := strings.IndexAny(s[i:], "=:")
		if j < 0 {
			break
		}
		p := i + j
		v, ok := separator(s, p)
		i = max(v, p+1)
		if !ok {
			continue
		}
		key, inURL, ok := keyBefore(s, p, isKey)
		if !ok {
			continue
		}
		start, end, quoted := valueAt(s, v)
		if !quoted && isBlockScalar(s[start:end]) {
			// YAML's password: | (or >-…): the value is the next line.
			start, end = blockScalarLine(s, end)
		}
		a := assignment{key: key, code: !quoted, prose: !quoted && s[p] == ':' && wordsFollow(s, end), inURL: inURL}
		if isValue(s[start:end], a) {
			return start, end
		}
	}
	return -1, -1
}

// isBlockScalar reports whether v is a YAML block scalar indicator.
func isBlockScalar(v string) bool {
	switch v {
	case "|", "|-", "|+", ">", ">-", ">+":
		return true
	}
	return false
}

// blockScalarLine returns the span of the first line of a block scalar
// whose indicator ends at i: the next non-blank line, without its
// indentation. It is empty when the indicator's own line goes on.
func blockScalarLine(s string, i int) (int, int) {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r') {
		i++
	}
	if i >= len(s) || s[i] != '\n' {
		return i, i
	}
	for i < len(s) && isBlank(s[i]) {
		i++
	}
	end := i
	for end < len(s) && end-i < maxValue && s[end] != '\n' && s[end] != '\r' {
		end++
	}
	return i, end
}

// separator reports whether the = or : at p separates a key from a value,
// and where the value starts. It skips ::, ://, and the operators != <= >=
// += and friends.
func separator(s string, p int) (int, bool) {
	next := func(k int) byte {
		if k < len(s) {
			return s[k]
		}
		return 0
	}
	if s[p] == ':' {
		switch {
		case next(p+1) == ':':
			return p + 2, false
		case next(p+1) == '/' && next(p+2) == '/':
			return p + 3, false
		case next(p+1) == '=':
			return p + 2, true
		}
		return p + 1, true
	}
	if p > 0 && strings.IndexByte("!<>+-*/%|&^~", s[p-1]) >= 0 {
		return p + 1, false
	}
	switch {
	case next(p+1) == '>':
		return p + 2, true
	case next(p+1) == '=':
		e := p + 1
		for e < len(s) && s[e] == '=' {
			e++
		}
		return e, true
	}
	return p + 1, true
}

// wordsFollow reports whether a blank and then a letter or digit follow
// s[:i] on its line: the value ending at i is the first word of prose.
func wordsFollow(s string, i int) bool {
	if i >= len(s) || s[i] != ' ' && s[i] != '\t' {
		return false
	}
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i < len(s) && isAlnum(s[i])
}

// keyBefore returns the key just before the separator at p when isKey
// accepts it, and whether it follows ? or & (a URL's parameter).
func keyBefore(s string, p int, isKey func(key string, inURL bool) bool) (string, bool, bool) {
	j := p
	for j > 0 && (s[j-1] == ' ' || s[j-1] == '\t') {
		j--
	}
	if j > 0 && isQuote(s[j-1]) {
		j--
		if j > 0 && s[j-1] == '\\' { // JSON inside a string: \"password\":
			j--
		}
	}
	k := j
	for k > 0 && isKeyByte(s[k-1]) {
		if k--; j-k > maxKey {
			return "", false, false
		}
	}
	key := s[k:j]
	if key == "" || s[p] == ':' && k > 0 && s[k-1] == ':' {
		return "", false, false // arn:aws:secretsmanager:…:secret:name is one token
	}
	inURL := s[p] == '=' && k > 0 && (s[k-1] == '?' || s[k-1] == '&')
	if isKey(key, inURL) {
		return key, inURL, true
	}
	// "API key: …", "Access token: …": a one-word key takes the word before.
	if k >= 2 && s[k-1] == ' ' && isAlpha(s[k-2]) && !strings.ContainsAny(key, "_.-") {
		w := k - 1
		for w > 0 && isAlpha(s[w-1]) && k-w <= maxKey {
			w--
		}
		return s[w:j], false, isKey(s[w:j], false)
	}
	return "", false, false
}

// valueAt reads the value that starts at or after i, skipping blanks. A
// quoted value (", ', `, or JSON-escaped \") runs to its closing quote or the
// end of the line; an unquoted one to a blank or one of , ; & ) ] } \ and the
// quotes. An HTTP auth scheme (Bearer, Basic, Token, Bot) is skipped so that
// the credential after it is judged.
func valueAt(s string, i int) (start, end int, quoted bool) {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i < len(s) && s[i] == '\\' && i+1 < len(s) && isQuote(s[i+1]) {
		i++
	}
	if i < len(s) && isQuote(s[i]) {
		q := s[i]
		start, end = i+1, i+1
		for end < len(s) && end-start < maxValue && s[end] != q && s[end] != '\n' && s[end] != '\\' {
			end++
		}
		if scheme := authScheme(s[start:end]); scheme > 0 {
			start += scheme
		}
		return start, end, true
	}
	for {
		start, end = i, i
		for end < len(s) && end-start < maxValue && !isValueStop(s[end]) {
			end++
		}
		// Authorization: Bearer abc… — judge what follows the scheme.
		if n := authScheme(s[start:min(end+1, len(s))]); n == 0 || n != end+1-start {
			return start, end, false
		}
		for i = end; i < len(s) && (s[i] == ' ' || s[i] == '\t'); i++ {
		}
	}
}

// authSchemes precede the credential in an Authorization header value.
var authSchemes = []string{"bearer ", "basic ", "token ", "bot ", "negotiate ", "ntlm ", "apikey ", "api-key ", "ssws ", "sharedkey ", "dpop "}

// authScheme returns the length of a leading "Bearer " (any case, with its
// blanks), or 0.
func authScheme(v string) int {
	for _, a := range authSchemes {
		if len(v) >= len(a) && strings.EqualFold(v[:len(a)], a) {
			n := len(a)
			for n < len(v) && v[n] == ' ' {
				n++
			}
			return n
		}
	}
	return 0
}

// findFlag finds the command-line form --password value (with a blank, not
// =, which findAssignment covers).
func findFlag(s string) (int, int) {
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], "--")
		if j < 0 {
			break
		}
		p := i + j
		i = p + 2
		if p > 0 && s[p-1] != ' ' && s[p-1] != '\t' && !isQuote(s[p-1]) && s[p-1] != '\n' {
			continue
		}
		k := p + 2
		for k < len(s) && k-p <= maxKey && (isAlnum(s[k]) || s[k] == '-' || s[k] == '_') {
			k++
		}
		if k == p+2 || k >= len(s) || s[k] != ' ' || !hasStem(s[p+2:k]) || !credentialName(s[p+2:k], false) {
			continue
		}
		// A value holding name=value pairs (--secret source=id,target=x) is
		// judged pair by pair by eachAssignment.
		start, end, quoted := valueAt(s, k)
		if start < end && s[start] != '-' && !strings.Contains(strings.TrimRight(s[start:end], "="), "=") && strictValue(s[start:end], flagCode(quoted)) {
			return start, end
		}
	}
	return -1, -1
}

// flagCode is how a --flag's value may read as code: a shell word, so a
// literal when quoted, an expression ($(…), a path) when not.
func flagCode(quoted bool) codeMode {
	if quoted {
		return noCode
	}
	return exprCode
}

func isQuote(c byte) bool { return c == '"' || c == '\'' || c == '`' }

func isKeyByte(c byte) bool { return isAlnum(c) || c == '_' || c == '-' || c == '.' }

func isValueStop(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', '"', '\'', '`', ',', ';', '&', ')', ']', '}', '\\':
		return true
	}
	return false
}

// stems is a cheap prefilter for credentialName: a credential name holds one
// of them (ASCII case-insensitively).
var stems = []string{"pass", "pw", "secret", "token", "key", "cred", "auth", "sig", "sess"}

func hasStem(name string) bool {
	for i := 0; i < len(name); i++ {
		switch lower(name[i]) {
		case 'p', 's', 't', 'k', 'c', 'a':
			for _, st := range stems {
				if st[0] == lower(name[i]) && hasPrefixFold(name[i:], st) {
					return true
				}
			}
		}
	}
	return false
}

// credentialHeads are last words that make a name a credential.
var credentialHeads = map[string]bool{
	"password": true, "passwd": true, "passphrase": true,
	"passwords": true, "secret": true, "secrets": true, "token": true,
	"credential": true, "credentials": true, "authorization": true,
	"passcode": true, "sshpass": true,
	// compounds written as one word
	"apikey": true, "accesskey": true, "secretkey": true, "privatekey": true,
}

// keyQualifiers make a following "key" a credential: api key, access key….
var keyQualifiers = map[string]bool{
	"api": true, "access": true, "secret": true, "private": true, "signing": true,
	"encryption": true, "master": true, "app": true, "auth": true, "client": true,
	"account": true, "session": true, "subscription": true,
}

// cursorWords make a following "token" a pagination cursor.
var cursorWords = map[string]bool{
	"page": true, "next": true, "prev": true, "previous": true,
	"continuation": true, "cursor": true, "sync": true,
}

// urlHeads are credentials only as URL parameters, where they grant access
// by themselves (presigned URLs, Firebase ?auth=, session ids).
var urlHeads = map[string]bool{
	"sig": true, "signature": true, "auth": true, "session": true,
	"sessionid": true, "sessid": true, "jsessionid": true, "phpsessid": true,
}

// credentialSuffixes catch compounds written as one word: dbpassword,
// pgpassword, accesstoken, clientsecret.
var credentialSuffixes = []string{"password", "passwd", "secret", "token"}

// credentialName reports whether a key or parameter name reads as a
// credential, judged by its words (see "Names" in docs/screen.md). inURL
// adds the URL-only names.
func credentialName(name string, inURL bool) bool {
	var pb, hb [maxWord]byte
	prev, head, ok := lastWords(name, &pb, &hb)
	return ok && credentialWords(prev, head, inURL)
}

// maxWord is the longest word of a name that credentialName judges; a
// longer last word is no credential.
const maxWord = 32

// credentialWords judges a name by its last word head and the word before
// it, prev (empty when there is none), both lower case.
func credentialWords(prev, head []byte, inURL bool) bool {
	h, p := string(head), string(prev) // compared and looked up without copies
	switch {
	case h == "token":
		return !cursorWords[p]
	case credentialHeads[h]:
		return true
	case h == "key":
		return keyQualifiers[p]
	case h == "pwd" || h == "pw":
		return p != "" // a bare PWD is the working directory
	case h == "pass":
		return p != "" || inURL // a bare PASS: is test output
	case inURL && urlHeads[h]:
		return true
	case inURL && h == "id" && p == "session":
		return true
	}
	for _, suf := range credentialSuffixes {
		if len(head) > len(suf) && string(head[len(head)-len(suf):]) == suf {
			return !(suf == "token" && cursorWords[string(head[:len(head)-len(suf)])])
		}
	}
	return false
}

// eachWord calls yield with the span of each word of name, in order:
// words split at punctuation and camelCase boundaries, so "X-Api-Key" is
// x, Api, Key, "APIKey" is API, Key, "oauth2Token" is oauth2, Token and
// "session_count" is session, count.
func eachWord(name string, yield func(start, end int)) {
	start := -1
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case !isAlnum(c):
			if start >= 0 {
				yield(start, i)
				start = -1
			}
		case start < 0:
			start = i
		case isUpper(c) && (isLower(name[i-1]) || isDigit(name[i-1])),
			isUpper(c) && isUpper(name[i-1]) && i+1 < len(name) && isLower(name[i+1]):
			yield(start, i)
			start = i
		}
	}
	if start >= 0 {
		yield(start, len(name))
	}
}

// lastWords writes the last two words of name, split as eachWord splits
// it, in lower case into pb and hb, and returns them; ok is false when name
// has no word or a word too long for the buffers. It allocates nothing.
func lastWords(name string, pb, hb *[maxWord]byte) (prev, head []byte, ok bool) {
	var spans [2][2]int // the last two word spans
	n := 0
	eachWord(name, func(start, end int) {
		spans[0], spans[1] = spans[1], [2]int{start, end}
		n++
	})
	if n == 0 {
		return nil, nil, false
	}
	lowerInto := func(buf *[maxWord]byte, sp [2]int) ([]byte, bool) {
		if sp[1]-sp[0] > maxWord {
			return nil, false
		}
		for i := sp[0]; i < sp[1]; i++ {
			buf[i-sp[0]] = lower(name[i])
		}
		return buf[:sp[1]-sp[0]], true
	}
	head, ok = lowerInto(hb, spans[1])
	if !ok {
		return nil, nil, false
	}
	if n >= 2 {
		if prev, ok = lowerInto(pb, spans[0]); !ok {
			prev = nil // a long word before: judge the head alone
		}
	}
	return prev, head, true
}

// splitWords splits a name into lower-case words as eachWord does:
// "X-Api-Key" → x api key, "APIKey" → api key.
func splitWords(name string) []string {
	var words []string
	eachWord(name, func(start, end int) {
		words = append(words, strings.ToLower(name[start:end]))
	})
	return words
}
