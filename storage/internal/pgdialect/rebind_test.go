package pgdialect

import (
	"strings"
	"testing"
)

func TestRebind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`SELECT 1`, `SELECT 1`},
		{`SELECT * FROM records WHERE id = ? AND namespace = ?`, `SELECT * FROM records WHERE id = $1 AND namespace = $2`},
		// Numbered as SQLite numbers them: a bare ? is one above the largest so far.
		{`WHERE client = ?1 AND session = ?2 AND used = 0 AND x IN (SELECT value FROM json_each(?3))`,
			`WHERE client = $1 AND session = $2 AND used = 0 AND x IN (SELECT value FROM json_each($3))`},
		{`VALUES (?2, ?, ?1, ?)`, `VALUES ($2, $3, $1, $4)`},
		{`VALUES (?5, ?5, ?)`, `VALUES ($5, $5, $6)`},
		{`LIMIT +?3`, `LIMIT +$3`},
		// Quoted text and comments keep their question marks.
		{`SELECT '?', ? FROM t`, `SELECT '?', $1 FROM t`},
		{`SELECT 'it''s ?', ?`, `SELECT 'it''s ?', $1`},
		{`SELECT "a?""b", ?`, `SELECT "a?""b", $1`},
		{"SELECT `a?`, ?", "SELECT `a?`, $1"},
		{"SELECT ? -- why?\n, ?", "SELECT $1 -- why?\n, $2"},
		{"SELECT ? -- why?", "SELECT $1 -- why?"},
		{`SELECT /* ? */ ?`, `SELECT /* ? */ $1`},
		{`SELECT 1 - -? /**/`, `SELECT 1 - -$1 /**/`},
		// UTF-8 passes through byte for byte.
		{`SELECT '東京?', ?`, `SELECT '東京?', $1`},
	} {
		got, err := Rebind(tc.in)
		if err != nil {
			t.Errorf("Rebind(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Rebind(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRebind_Refuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`SELECT 'open ?`, "never closed"},
		{`SELECT "open ?`, "never closed"},
		{`SELECT ? /* open`, "never closed"},
		{`SELECT ?0`, "not between ?1 and ?32766"},
		{`SELECT ?32767`, "not between ?1 and ?32766"},
		{`SELECT ?99999999999999999999`, "not between"},
		{`SELECT ?32766, ?`, "above ?32766"},
		{`SELECT $1`, "write parameters as ?"},
		{`SELECT $$?$$`, "write parameters as ?"},
	} {
		got, err := Rebind(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Rebind(%q) = %q, %v; want an error saying %q", tc.in, got, err, tc.want)
		}
	}
}

// FuzzRebind checks, for any input Rebind accepts, that the output has no
// ? placeholder left, holds as many $ placeholders as the input held ?
// ones, and differs from it only in them.
func FuzzRebind(f *testing.F) {
	for _, s := range []string{
		`SELECT * FROM records WHERE id = ? AND namespace = ?`,
		`VALUES (?2, ?, ?1, ?)`,
		`SELECT 'it''s ?', "a?""b", ? -- c?` + "\n" + `/* ? */ ?`,
		`INSERT INTO usage (record_id, returned) VALUES (?, 1) ON CONFLICT (record_id) DO UPDATE SET returned = returned + 1`,
		`SELECT '東京?', ?9`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := Rebind(in)
		if err != nil {
			return
		}
		if _, n := strip(t, out, '?'); n != 0 {
			t.Fatalf("Rebind(%q) = %q: %d ? placeholders are left", in, out, n)
		}
		a, na := strip(t, in, '?')
		b, nb := strip(t, out, '$')
		if a != b || na != nb {
			t.Fatalf("Rebind(%q) = %q: without placeholders %q (%d) and %q (%d) differ", in, out, a, na, b, nb)
		}
	})
}

// strip removes the placeholders marked by mark (? or $, each with the
// digits after it) outside quotes and comments, and counts them.
func strip(t *testing.T, s string, mark byte) (string, int) {
	t.Helper()
	var b strings.Builder
	n := 0
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '\'' || c == '"' || c == '`':
			end := closeQuote(s, i, c)
			if end < 0 {
				t.Fatalf("%q: a quote at %d is never closed", s, i)
			}
			b.WriteString(s[i:end])
			i = end
		case strings.HasPrefix(s[i:], "--"):
			end := strings.IndexByte(s[i:], '\n')
			if end < 0 {
				end = len(s) - i
			}
			b.WriteString(s[i : i+end])
			i += end
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/") + 4
			b.WriteString(s[i : i+end])
			i += end
		case c == mark:
			n++
			i++
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), n
}
