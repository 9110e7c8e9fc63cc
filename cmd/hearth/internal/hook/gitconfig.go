package hook

import (
	"errors"
	"strings"
)

// maxGitConfigBytes bounds one git config file the hooks read.
const maxGitConfigBytes = 1 << 20

// gitEntry is one variable of a git config file: section and key in lower
// case, the subsection as written (it is case-sensitive), and the value with
// quotes and escapes resolved. A key given without "=" has the value "true".
type gitEntry struct {
	Section, Subsection, Key, Value string
}

var errGitConfig = errors.New("malformed git config")

// parseGitConfig reads git's config format: [section], [section "sub"] and
// the old [section.sub] headers; key = value lines; # and ; comments;
// double quotes; the escapes \\ \" \n \t \b; a backslash before a newline
// continues the value. It stops at the first malformed line and returns the
// entries before it with errGitConfig, as git would refuse the file.
func parseGitConfig(data string) ([]gitEntry, error) {
	p := gitParser{s: data}
	var out []gitEntry
	section, sub := "", ""
	for {
		p.skipSpace()
		if p.eof() {
			return out, nil
		}
		switch c := p.s[p.i]; {
		case c == '\n':
			p.i++
		case c == '#' || c == ';':
			p.skipLine()
		case c == '[':
			s, ss, ok := p.header()
			if !ok {
				return out, errGitConfig
			}
			section, sub = s, ss
		case isGitKeyStart(c):
			if section == "" {
				return out, errGitConfig
			}
			key := p.key()
			p.skipSpace()
			value := "true"
			if !p.eof() && p.s[p.i] == '=' {
				p.i++
				v, ok := p.value()
				if !ok {
					return out, errGitConfig
				}
				value = v
			} else if !p.eof() && p.s[p.i] != '\n' && p.s[p.i] != '#' && p.s[p.i] != ';' {
				return out, errGitConfig
			} else {
				p.skipLine()
			}
			out = append(out, gitEntry{Section: section, Subsection: sub, Key: key, Value: value})
		default:
			return out, errGitConfig
		}
	}
}

type gitParser struct {
	s string
	i int
}

func (p *gitParser) eof() bool { return p.i >= len(p.s) }

// skipSpace skips blanks on the current line (and a UTF-8 byte order mark
// at the very start).
func (p *gitParser) skipSpace() {
	if p.i == 0 && strings.HasPrefix(p.s, "\ufeff") {
		p.i = len("\ufeff")
	}
	for !p.eof() && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *gitParser) skipLine() {
	for !p.eof() && p.s[p.i] != '\n' {
		p.i++
	}
}

// header reads [section], [section "sub"] or [section.sub] and the rest of
// its line (a comment may follow).
func (p *gitParser) header() (section, sub string, ok bool) {
	p.i++ // [
	start := p.i
	for !p.eof() && (isGitKeyByte(p.s[p.i]) || p.s[p.i] == '.') {
		p.i++
	}
	name := strings.ToLower(p.s[start:p.i])
	if name == "" || p.eof() {
		return "", "", false
	}
	switch p.s[p.i] {
	case ']':
		p.i++
		if dot := strings.IndexByte(name, '.'); dot >= 0 {
			// [section.sub]: the old form, subsection lower-cased.
			section, sub = name[:dot], name[dot+1:]
		} else {
			section = name
		}
	case ' ', '\t':
		if strings.Contains(name, ".") {
			return "", "", false
		}
		for !p.eof() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
			p.i++
		}
		if p.eof() || p.s[p.i] != '"' {
			return "", "", false
		}
		p.i++
		var b strings.Builder
		for {
			if p.eof() || p.s[p.i] == '\n' {
				return "", "", false
			}
			c := p.s[p.i]
			p.i++
			if c == '"' {
				break
			}
			if c == '\\' {
				if p.eof() || p.s[p.i] == '\n' {
					return "", "", false
				}
				c = p.s[p.i]
				p.i++
			}
			b.WriteByte(c)
		}
		if p.eof() || p.s[p.i] != ']' {
			return "", "", false
		}
		p.i++
		section, sub = name, b.String()
	default:
		return "", "", false
	}
	p.skipSpace()
	if !p.eof() && p.s[p.i] != '\n' && p.s[p.i] != '#' && p.s[p.i] != ';' {
		return "", "", false
	}
	p.skipLine()
	return section, sub, true
}

func (p *gitParser) key() string {
	start := p.i
	for !p.eof() && isGitKeyByte(p.s[p.i]) {
		p.i++
	}
	return strings.ToLower(p.s[start:p.i])
}

// value reads a value after '=' up to the end of its (continued) line.
func (p *gitParser) value() (string, bool) {
	var b strings.Builder
	quoted := false
	pending := 0 // blanks seen outside quotes, written only if more follows
	started := false
	for !p.eof() {
		c := p.s[p.i]
		switch {
		case c == '\n':
			if quoted {
				return "", false
			}
			p.i++
			return b.String(), true
		case c == '\r' && !quoted && p.i+1 < len(p.s) && p.s[p.i+1] == '\n':
			p.i++
			continue
		case !quoted && (c == ' ' || c == '\t'):
			if started {
				pending++
			}
			p.i++
			continue
		case !quoted && (c == '#' || c == ';'):
			p.skipLine()
			continue
		}
		if started && pending > 0 && !quoted {
			b.WriteString(strings.Repeat(" ", pending))
		}
		pending = 0
		p.i++
		switch c {
		case '"':
			quoted = !quoted
			started = true
		case '\\':
			if p.eof() {
				return "", false
			}
			e := p.s[p.i]
			p.i++
			switch e {
			case '\n':
				// A continuation: the value goes on on the next line.
				continue
			case '\r':
				if !p.eof() && p.s[p.i] == '\n' {
					p.i++
					continue
				}
				return "", false
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'b':
				s := b.String()
				if s != "" {
					b.Reset()
					b.WriteString(s[:len(s)-1])
				}
			case '"', '\\':
				b.WriteByte(e)
			default:
				return "", false
			}
			started = true
		default:
			b.WriteByte(c)
			started = true
		}
	}
	if quoted {
		return "", false
	}
	return b.String(), true
}

func isGitKeyStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isGitKeyByte(c byte) bool {
	return isGitKeyStart(c) || c >= '0' && c <= '9' || c == '-'
}
