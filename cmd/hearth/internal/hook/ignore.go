package hook

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// IgnoreFile is the per-repository exclusion file, read from the top of the
// checkout: the paths and commands Hearth never captures (docs/capture.md).
const IgnoreFile = ".hearthignore"

// maxIgnoreBytes bounds the exclusion file the hook reads.
const maxIgnoreBytes = 64 << 10

// Ignore is a parsed exclusion file. The zero value and nil exclude nothing.
type Ignore struct {
	paths    []*regexp.Regexp
	commands []*regexp.Regexp
}

// LoadIgnore reads root's exclusion file; a missing or unreadable one
// excludes nothing, and one larger than 64 KiB is read no further.
func LoadIgnore(root string) *Ignore {
	if root == "" {
		return nil
	}
	f, err := os.Open(filepath.Join(root, IgnoreFile))
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, maxIgnoreBytes)
	n, _ := f.Read(b)
	return ParseIgnore(string(b[:n]))
}

// ParseIgnore parses an exclusion file: one pattern a line; blank lines and
// lines starting with # are skipped. A line "cmd: PATTERN" excludes the
// commands it matches: * matches any run of characters, and a pattern
// matches a command that is it or starts with it followed by a space
// ("cmd: terraform" excludes "terraform apply"). Any other line is a path
// pattern, matched against a repository-relative path as .gitignore does
// in its common forms: * and ? match within one path segment, ** across
// segments; a pattern without a slash matches any segment (a file or
// directory name anywhere); one with a slash is anchored at the top (a
// leading / is dropped); a trailing / matches a directory and everything in
// it. Negation (!) is not supported: such a line is skipped.
func ParseIgnore(text string) *Ignore {
	ig := &Ignore{}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "!") {
			continue
		}
		if c, ok := strings.CutPrefix(line, "cmd:"); ok {
			c = strings.Join(strings.Fields(c), " ")
			if c == "" {
				continue
			}
			ig.commands = append(ig.commands, regexp.MustCompile(`^`+globRegexp(c, true)+`(?:\s.*)?$`))
			continue
		}
		ig.paths = append(ig.paths, pathPattern(line))
	}
	return ig
}

// pathPattern compiles one path line of the exclusion file.
func pathPattern(p string) *regexp.Regexp {
	dir := strings.HasSuffix(p, "/")
	p = strings.Trim(p, "/")
	anchored := strings.Contains(p, "/")
	re := globRegexp(p, false)
	if !anchored {
		re = `(?:.*/)?` + re
	}
	// A match names the path itself or a directory holding it.
	if dir {
		return regexp.MustCompile(`^` + re + `/.*$`)
	}
	return regexp.MustCompile(`^` + re + `(?:/.*)?$`)
}

// globRegexp turns a glob into a regular expression: with any, * matches
// anything; otherwise * and ? stay within a path segment and ** crosses them.
func globRegexp(g string, any bool) string {
	var b strings.Builder
	for i := 0; i < len(g); i++ {
		switch c := g[i]; {
		case c == '*' && !any && i+1 < len(g) && g[i+1] == '*':
			i++
			if i+1 < len(g) && g[i+1] == '/' {
				i++
				b.WriteString(`(?:.*/)?`)
			} else {
				b.WriteString(`.*`)
			}
		case c == '*' && any:
			b.WriteString(`.*`)
		case c == '*':
			b.WriteString(`[^/]*`)
		case c == '?' && !any:
			b.WriteString(`[^/]`)
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String()
}

// Path reports whether a repository-relative path (forward slashes) is
// excluded.
func (ig *Ignore) Path(rel string) bool {
	if ig == nil {
		return false
	}
	for _, re := range ig.paths {
		if re.MatchString(rel) {
			return true
		}
	}
	return false
}

// Command reports whether a command line is excluded: the whole line, or
// any part of it split at &&, ||, ; and |, matches a cmd: pattern. A
// command with a word that looks like a path (it holds / or .) and is an
// excluded path is excluded too.
func (ig *Ignore) Command(cmd string) bool {
	if ig == nil {
		return false
	}
	line := strings.Join(strings.Fields(cmd), " ")
	parts := append([]string{line}, commandParts().Split(line, -1)...)
	for _, p := range parts {
		p = strings.TrimSpace(p)
		for _, re := range ig.commands {
			if re.MatchString(p) {
				return true
			}
		}
		for _, w := range strings.Fields(p) {
			// Only a word that looks like a path: a bare word such as
			// "build" is a command's argument as often as a directory.
			if strings.ContainsAny(w, "/.") && ig.Path(strings.TrimPrefix(filepath.ToSlash(w), "./")) {
				return true
			}
		}
	}
	return false
}

// commandParts splits a command line at &&, ||, ; and |.
var commandParts = lazyRegexp(`&&|\|\||;|\|`)
