package screen

import "strings"

// This file holds the shapes that are not key=value: driver DSNs,
// connection strings, .pgpass and .netrc lines, passwords on command lines,
// and secrets stated in prose. Each judges the password it finds with
// realValue, so placeholders pass everywhere.

// findDriverDSN finds the password of a database driver DSN that is not a
// URL: Go's MySQL user:pass@tcp(host:3306)/db (also tcp4, tcp6, unix, udp)
// and Oracle's EZConnect user/pass@//host:1521/service.
func findDriverDSN(s string) (int, int) {
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], '@')
		if j < 0 {
			break
		}
		at := i + j
		i = at + 1
		sep := byte(0)
		switch {
		case hasPrefixFold(s[at+1:], "tcp(") || hasPrefixFold(s[at+1:], "tcp4(") || hasPrefixFold(s[at+1:], "tcp6(") ||
			hasPrefixFold(s[at+1:], "unix(") || hasPrefixFold(s[at+1:], "udp("):
			sep = ':'
		case strings.HasPrefix(s[at+1:], "//") && at+3 < len(s) && isAlnum(s[at+3]):
			sep = '/'
		default:
			continue
		}
		// The userinfo runs back to a blank, a quote, = or an opening
		// bracket; the user ends at the first separator.
		k := at
		for k > 0 && at-k < maxKey+maxValue && !isDSNStop(s[k-1]) {
			k--
		}
		c := strings.IndexByte(s[k:at], sep)
		if c <= 0 || !dsnUser(s[k:k+c]) {
			continue
		}
		if start, end := k+c+1, at; realValue(s[start:end], false) {
			return start, end
		}
	}
	return -1, -1
}

// dsnUser reports whether u reads as a database user name.
func dsnUser(u string) bool {
	for i := 0; i < len(u); i++ {
		if c := u[i]; !isAlnum(c) && c != '_' && c != '.' && c != '-' && c != '$' && c != '#' {
			return false
		}
	}
	return true
}

func isDSNStop(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', '"', '\'', '`', '=', '(', '[', '{', '<', ',', ';':
		return true
	}
	return false
}

// connKeys are the credential keys of ;-separated connection strings
// (ADO.NET, ODBC, JDBC for SQL Server, Azure Storage, Service Bus, Event
// Hubs, Cosmos DB), compared without case and blanks.
var connKeys = []string{"password", "pwd", "accountkey", "sharedaccesskey", "userpassword"}

// findConnString finds a credential in a key=value;… connection string:
// Server=…;User ID=…;Password=…; Driver={…};Uid=…;Pwd={…};
// DefaultEndpointsProtocol=https;AccountName=…;AccountKey=…;. The key must
// start the string or follow a ;, and the string must hold a ; so that a
// lone pwd=… (often a directory) is not taken for one. An ODBC value may
// be braced: Pwd={…}.
func findConnString(s string) (int, int) {
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], '=')
		if j < 0 {
			break
		}
		eq := i + j
		i = eq + 1
		// The key, back to ; or the start of the string.
		k := eq
		for k > 0 && eq-k <= maxKey && s[k-1] != ';' && !isConnStop(s[k-1]) {
			k--
		}
		if eq-k > maxKey || !connKey(s[k:eq]) {
			continue
		}
		semiBefore := k > 0 && s[k-1] == ';'
		// The value, to ; or the end of the string.
		v := eq + 1
		for v < len(s) && s[v] == ' ' {
			v++
		}
		start, end := v, v
		switch {
		case v < len(s) && s[v] == '{':
			start = v + 1
			end = start
			for end < len(s) && end-start < maxValue && s[end] != '}' && s[end] != '\n' {
				end++
			}
		case v < len(s) && (s[v] == '"' || s[v] == '\''):
			q := s[v]
			start = v + 1
			end = start
			for end < len(s) && end-start < maxValue && s[end] != q && s[end] != '\n' {
				end++
			}
		default:
			for end < len(s) && end-start < maxValue && s[end] != ';' && !isConnStop(s[end]) {
				end++
			}
		}
		semiAfter := strings.IndexByte(s[end:min(len(s), end+2)], ';') >= 0
		if !semiBefore && !semiAfter {
			continue
		}
		if realValue(s[start:end], false) {
			return start, end
		}
	}
	return -1, -1
}

func isConnStop(c byte) bool {
	switch c {
	case '\r', '\n', '"', '\'', '`':
		return true
	}
	return false
}

// connKey reports whether a connection-string key is a credential key.
func connKey(key string) bool {
	key = strings.TrimSpace(key)
	if key == "" || len(key) > 32 {
		return false
	}
	var b [32]byte
	n := 0
	for i := 0; i < len(key); i++ {
		if key[i] != ' ' {
			b[n] = lower(key[i])
			n++
		}
	}
	for _, k := range connKeys {
		if string(b[:n]) == k {
			return true
		}
	}
	return false
}

// findPgpass finds the password of a .pgpass line,
// hostname:port:database:username:password, as a word of its own: exactly
// five fields (a : inside one is escaped as \:), a numeric port or *, and
// names without blanks.
func findPgpass(s string) (int, int) {
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], ':')
		if j < 0 {
			break
		}
		// The word holding this colon.
		k := i + j
		for k > 0 && !isPgpassStop(s[k-1]) {
			k--
		}
		e := i + j
		for e < len(s) && !isPgpassStop(s[e]) {
			e++
		}
		i = e + 1
		var f [6]int // field starts, then the end
		n := 0
		f[0] = k
		for p := k; p < e && n < 5; p++ {
			if s[p] == '\\' {
				p++
				continue
			}
			if s[p] == ':' {
				n++
				if n < 5 {
					f[n] = p + 1
				} else {
					break
				}
			}
		}
		if n != 4 {
			continue
		}
		f[5] = e
		host, port := s[f[0]:f[1]-1], s[f[1]:f[2]-1]
		db, user := s[f[2]:f[3]-1], s[f[3]:f[4]-1]
		if !pgpassHost(host) || !(port == "*" || allDigits(port) && len(port) <= 5) || db == "" || user == "" {
			continue
		}
		if realValue(s[f[4]:e], false) {
			return f[4], e
		}
	}
	return -1, -1
}

func isPgpassStop(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', '"', '\'', '`':
		return true
	}
	return false
}

func pgpassHost(h string) bool {
	if h == "*" {
		return true
	}
	if h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !isAlnum(c) && c != '.' && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

// findNetrc finds the password of a .netrc entry: machine <host> (or
// default) followed by login, password or account tokens, on one line or
// several. Only a password right after its keyword counts.
func findNetrc(t *text) (int, int) {
	s := t.s
	for _, h := range t.netrc {
		e := h.end
		p := e - len(hints.words[h.id])
		if p > 0 && isWordByte(s[p-1]) || e < len(s) && isWordByte(s[e]) {
			continue
		}
		w := splitBlanks(s[p:min(len(s), p+maxAuthority)])
		// machine host login x password y …, default login x password y …
		k := 1
		if strings.EqualFold(w.word(0), "machine") {
			k = 2
		}
		if !netrcKeyword(w.word(k)) {
			continue
		}
		for ; k+1 < w.n; k += 2 {
			kw := strings.ToLower(w.word(k))
			if !netrcKeyword(kw) {
				break
			}
			if kw == "password" || kw == "passwd" {
				start, end := p+w.start[k+1], p+w.end[k+1]
				if realValue(s[start:end], false) {
					return start, end
				}
			}
		}
	}
	return -1, -1
}

func netrcKeyword(w string) bool {
	switch strings.ToLower(w) {
	case "login", "password", "passwd", "account":
		return true
	}
	return false
}

// words is a few blank-separated words of a text, by span.
type words struct {
	n          int
	start, end [12]int
	s          string
}

func (w *words) word(i int) string {
	if i >= w.n {
		return ""
	}
	return w.s[w.start[i]:w.end[i]]
}

func splitBlanks(s string) words {
	w := words{s: s}
	for i := 0; i < len(s) && w.n < len(w.start); {
		for i < len(s) && isBlank(s[i]) {
			i++
		}
		if i == len(s) {
			break
		}
		w.start[w.n] = i
		for i < len(s) && !isBlank(s[i]) {
			i++
		}
		w.end[w.n] = i
		w.n++
	}
	return w
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && indexFold(s[:len(prefix)], prefix) == 0
}
