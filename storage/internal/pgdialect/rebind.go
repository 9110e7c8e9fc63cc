// Package pgdialect turns the SQL the record domain writes for SQLite into
// the form PostgreSQL takes, where the two differ only in spelling: the
// placeholders (docs/postgres.md, The dialect).
package pgdialect

import (
	"fmt"
	"strconv"
	"strings"
)

// Rebind rewrites SQLite's placeholders in query as PostgreSQL's: ?NNN
// becomes $NNN, and a bare ? the number one above the largest assigned
// before it, as SQLite numbers them (so "?2, ?, ?1" is "$2, $3, $1").
// Question marks inside string literals ('...'), quoted identifiers
// ("..." and `...`) and comments (-- to the end of the line, /* ... */)
// are left as they are. A ?NNN out of SQLite's range (1 to 32766), a $
// outside them (a named parameter to SQLite, a placeholder or a dollar
// quote to PostgreSQL), or a literal, identifier or block comment left
// open, is an error: the statement would not mean the same on both.
func Rebind(query string) (string, error) {
	var b strings.Builder
	b.Grow(len(query) + 8)
	largest := 0
	for i := 0; i < len(query); {
		c := query[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			end := closeQuote(query, i, c)
			if end < 0 {
				return "", fmt.Errorf("pgdialect: %c at byte %d is never closed", c, i)
			}
			b.WriteString(query[i:end])
			i = end
		case c == '-' && strings.HasPrefix(query[i:], "--"):
			end := strings.IndexByte(query[i:], '\n')
			if end < 0 {
				end = len(query) - i
			}
			b.WriteString(query[i : i+end])
			i += end
		case c == '/' && strings.HasPrefix(query[i:], "/*"):
			end := strings.Index(query[i+2:], "*/")
			if end < 0 {
				return "", fmt.Errorf("pgdialect: the comment at byte %d is never closed", i)
			}
			b.WriteString(query[i : i+2+end+2])
			i += 2 + end + 2
		case c == '$':
			return "", fmt.Errorf("pgdialect: $ at byte %d: write parameters as ? or ?NNN", i)
		case c == '?':
			j := i + 1
			for j < len(query) && query[j] >= '0' && query[j] <= '9' {
				j++
			}
			n := largest + 1
			if j > i+1 {
				var err error
				n, err = strconv.Atoi(query[i+1 : j])
				if err != nil || n < 1 || n > maxParam {
					return "", fmt.Errorf("pgdialect: parameter %s at byte %d is not between ?1 and ?%d", query[i:j], i, maxParam)
				}
			} else if n > maxParam {
				return "", fmt.Errorf("pgdialect: the ? at byte %d would be parameter %d, above ?%d", i, n, maxParam)
			}
			largest = max(largest, n)
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), nil
}

// maxParam is the largest parameter number SQLite accepts
// (SQLITE_MAX_VARIABLE_NUMBER's default); PostgreSQL takes up to 65535.
const maxParam = 32766

// closeQuote returns the index just past the quote q that opens at
// query[start], a doubled quote standing for itself, or -1 when it is never
// closed.
func closeQuote(query string, start int, q byte) int {
	for i := start + 1; i < len(query); i++ {
		if query[i] != q {
			continue
		}
		if i+1 < len(query) && query[i+1] == q {
			i++
			continue
		}
		return i + 1
	}
	return -1
}
