package screen

import (
	"regexp"
	"strings"
	"sync"
)

// lazyExprs are the expressions of every lazyRegexp, for the test that
// compiles them all.
var lazyExprs []string

// lazyRegexp returns a function that compiles expr on its first call and
// returns that *regexp.Regexp from then on. Every expression of the screen
// is compiled this way, as are the rule tables (prepare): the package's
// init compiles nothing, and a process that screens a few short values (a
// hook, docs/capture.md) compiles only what those values call for.
func lazyRegexp(expr string) func() *regexp.Regexp {
	lazyExprs = append(lazyExprs, expr)
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// literalPrefix is the literal that every match of expr starts with, as
// (*regexp.Regexp).LiteralPrefix would find it once expr is compiled (a
// test holds the two equal for every reFind expression): its leading
// characters up to the first operator, escapes of punctuation taken as the
// character, and a character that a quantifier follows left out.
func literalPrefix(expr string) string {
	var b strings.Builder
	for i := 0; i < len(expr); i++ {
		c, n := expr[i], 1
		switch {
		case c == '\\':
			if i+1 == len(expr) || isAlnum(expr[i+1]) || expr[i+1] >= 0x80 {
				return b.String() // \b, \d, \A…: not a character
			}
			c, n = expr[i+1], 2
		case c >= 0x80 || strings.IndexByte(`.+*?()|[]{}^$`, c) >= 0:
			return b.String()
		}
		if j := i + n; j < len(expr) && strings.IndexByte("*+?{", expr[j]) >= 0 {
			return b.String()
		}
		b.WriteByte(c)
		i += n - 1
	}
	return b.String()
}
