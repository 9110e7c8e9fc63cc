package screen

import (
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// An anchor is a set of literals one of which every match of an expression
// holds at a known distance from the match's start: off bytes, with off
// between minOff and maxOff. Every match is then found by trying the
// expression, anchored, at each literal occurrence minus each such
// distance, instead of scanning the whole value; see liveRule.find.
type anchor struct {
	lits           []anchorLit
	minOff, maxOff int
}

type anchorLit struct {
	s    string // lower case when fold is set
	fold bool   // matched ignoring case
	after
}

// after is what a match holds right after a literal: the bytes that may
// come first, and a run of run bytes that must all be in runSet (ghp_ is
// followed by 36 alphanumerics; run is capped at maxRun).
type after struct {
	follow byteSet
	run    int
	runSet byteSet
}

// maxRun caps the bytes checked after a literal.
const maxRun = 16

// anything is the after of the end of an expression: any byte may follow.
var anything = after{follow: anyByte}

// A byteSet is a set of bytes.
type byteSet [4]uint64

func (b *byteSet) add(c byte)      { b[c/64] |= 1 << (c % 64) }
func (b *byteSet) has(c byte) bool { return b[c/64]&(1<<(c%64)) != 0 }
func (b *byteSet) union(o byteSet) {
	b[0], b[1], b[2], b[3] = b[0]|o[0], b[1]|o[1], b[2]|o[2], b[3]|o[3]
}
func (b *byteSet) subset(o byteSet) bool {
	return b[0]&^o[0] == 0 && b[1]&^o[1] == 0 && b[2]&^o[2] == 0 && b[3]&^o[3] == 0
}

// anyByte is every byte.
var anyByte = byteSet{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}

// wordBytes are the bytes \b counts as word characters.
var wordBytes = func() byteSet {
	var b byteSet
	for c := 0; c < 256; c++ {
		if isWordByte(byte(c)) {
			b.add(byte(c))
		}
	}
	return b
}()

// minAnchor is the shortest literal searched for: a literal of one byte
// (the | of a Facebook token) is used when there is nothing longer.
const minAnchor = 1

// maxSpread bounds maxOff-minOff: each occurrence costs that many anchored
// attempts.
const maxSpread = 8

// A plan is how a rule runs: core is the expression without the optional
// leading part that only widens a match for reporting ([\w.-]{0,50}? in
// gitleaks' keyword rules), anc anchors core, and span bounds a match of
// core (-1: unbounded). With wordStart, core starts with \b before a word
// character, so a match cannot start right after one.
type plan struct {
	core      string
	anc       anchor
	span      int
	wordStart bool
}

// planRule analyses expr (Perl syntax, as regexp.Compile parses it). With
// ok false the rule runs unanchored on the whole value.
func planRule(expr string) (p plan, ok bool) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return plan{}, false
	}
	p.core = expr
	// Drop leading parts that can match empty and hold no assertion (\b,
	// ^…) and no capture (which would renumber the secret group): a match
	// of the rest, anchored where it starts, is a match of the whole with
	// those parts empty, and every match of the whole holds one of the rest
	// with the same groups. Each branch of a top-level alternation is
	// stripped alike.
	if stripped := strip(re); stripped != re {
		re = stripped
		p.core = re.String()
	}
	a, ok := anchorOf(re, anything)
	if !ok || a.maxOff-a.minOff > maxSpread {
		return plan{}, false
	}
	p.anc = a
	p.span = maxLen(re)
	if re.Op == syntax.OpConcat && len(re.Sub) > 1 && re.Sub[0].Op == syntax.OpWordBoundary {
		first, nullable := firstBytes(re.Sub[1:])
		p.wordStart = !nullable && first.subset(wordBytes)
	}
	return p, true
}

// firstBytes returns the bytes a match of the concatenation of res can
// start with, and whether it can be empty (then anything that follows may
// come first). Assertions are taken as empty, which only adds bytes.
func firstBytes(res []*syntax.Regexp) (byteSet, bool) {
	var out byteSet
	for _, re := range res {
		f, nullable := first(re)
		out.union(f)
		if !nullable {
			return out, false
		}
	}
	return out, true
}

func first(re *syntax.Regexp) (byteSet, bool) {
	var b byteSet
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return b, true
		}
		addRune(&b, re.Rune[0], re.Flags&syntax.FoldCase != 0)
		return b, false
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			for r := lo; r <= hi && r < utf8.RuneSelf; r++ {
				b.add(byte(r))
			}
			if hi >= utf8.RuneSelf {
				for c := 0x80; c < 0x100; c++ {
					b.add(byte(c)) // lead bytes, and invalid bytes as U+FFFD
				}
			}
		}
		return b, len(re.Rune) == 0
	case syntax.OpAnyChar:
		return anyByte, false
	case syntax.OpAnyCharNotNL:
		b = anyByte
		b[0] &^= 1 << '\n'
		return b, false
	case syntax.OpCapture, syntax.OpPlus:
		return first(re.Sub[0])
	case syntax.OpStar, syntax.OpQuest:
		f, _ := first(re.Sub[0])
		return f, true
	case syntax.OpRepeat:
		f, nullable := first(re.Sub[0])
		return f, nullable || re.Min == 0
	case syntax.OpConcat:
		return firstBytes(re.Sub)
	case syntax.OpAlternate:
		nullable := false
		for _, sub := range re.Sub {
			f, n := first(sub)
			b.union(f)
			nullable = nullable || n
		}
		return b, nullable
	}
	return b, true // empty matches and assertions
}

// addRune adds the first byte of r's encoding, and of its folds.
func addRune(b *byteSet, r rune, fold bool) {
	var buf [utf8.UTFMax]byte
	add := func(r rune) {
		if r < utf8.RuneSelf {
			b.add(byte(r))
			return
		}
		utf8.EncodeRune(buf[:], r)
		b.add(buf[0])
	}
	add(r)
	if fold {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			add(f)
		}
	}
}

// strip returns re without its leading optional parts; see planRule.
func strip(re *syntax.Regexp) *syntax.Regexp {
	switch re.Op {
	case syntax.OpConcat:
		k := 0
		for k < len(re.Sub)-1 && minLen(re.Sub[k]) == 0 && plain(re.Sub[k]) {
			k++
		}
		if k > 0 {
			return &syntax.Regexp{Op: syntax.OpConcat, Flags: re.Flags, Sub: re.Sub[k:]}
		}
	case syntax.OpAlternate:
		var subs []*syntax.Regexp
		changed := false
		for _, b := range re.Sub {
			sb := strip(b)
			changed = changed || sb != b
			subs = append(subs, sb)
		}
		if changed {
			return &syntax.Regexp{Op: syntax.OpAlternate, Flags: re.Flags, Sub: subs}
		}
	}
	return re
}

// plain reports whether re holds no empty-width assertion and no capture.
func plain(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpCapture, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return false
	}
	for _, s := range re.Sub {
		if !plain(s) {
			return false
		}
	}
	return true
}

// anchorOf returns the best anchor of re, relative to the start of its
// match; next is what may come right after re.
func anchorOf(re *syntax.Regexp, next after) (anchor, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		fold := re.Flags&syntax.FoldCase != 0
		s := string(re.Rune)
		if len(s) < minAnchor || !isASCII(s) {
			return anchor{}, false
		}
		if fold {
			s = strings.ToLower(s)
		}
		return anchor{lits: []anchorLit{{s, fold, next}}}, true
	case syntax.OpCharClass:
		set, ok := classSet(re)
		if !ok {
			return anchor{}, false
		}
		var a anchor
		for _, c := range set {
			a.lits = append(a.lits, anchorLit{c, false, next})
		}
		return a, true
	case syntax.OpCapture:
		return anchorOf(re.Sub[0], next)
	case syntax.OpPlus, syntax.OpRepeat:
		// The first iteration holds an occurrence; another iteration may
		// follow it.
		if re.Op == syntax.OpRepeat && re.Min < 1 {
			return anchor{}, false
		}
		f, _ := first(re.Sub[0])
		f.union(next.follow)
		return anchorOf(re.Sub[0], after{follow: f})
	case syntax.OpAlternate:
		var out anchor
		for i, sub := range re.Sub {
			a, ok := anchorOf(sub, next)
			if !ok {
				return anchor{}, false
			}
			out.lits = append(out.lits, a.lits...)
			if i == 0 {
				out.minOff, out.maxOff = a.minOff, a.maxOff
			}
			out.minOff = min(out.minOff, a.minOff)
			out.maxOff = max(out.maxOff, a.maxOff)
		}
		return out, true
	case syntax.OpConcat:
		best, found := anchor{}, false
		minPre, maxPre := 0, 0
		for i, sub := range re.Sub {
			if maxPre < 0 {
				break
			}
			f, nullable := firstBytes(re.Sub[i+1:])
			if nullable {
				f.union(next.follow)
			}
			nx := after{follow: f}
			if i+1 < len(re.Sub) {
				nx.run, nx.runSet = classRun(re.Sub[i+1])
			}
			if a, ok := anchorOf(sub, nx); ok {
				a.minOff += minPre
				a.maxOff += maxPre
				if !found || better(a, best) {
					best, found = a, true
				}
			}
			// The literals a match of the rest starts with, across
			// elements: (?:sc|scauth)_ gives sc_ and scauth_.
			if set, _ := prefixSet(re.Sub[i:]); len(set) > 0 {
				a := anchor{minOff: minPre, maxOff: maxPre}
				for _, l := range set {
					a.lits = append(a.lits, anchorLit{l.s, l.fold, anything})
				}
				if !found || better(a, best) {
					best, found = a, true
				}
			}
			minPre += minLen(sub)
			maxPre = addLen(maxPre, maxLen(sub))
		}
		return best, found
	}
	return anchor{}, false
}

// classRun returns the run a repeated character class requires:
// [a-z0-9]{24} requires 24 (capped at maxRun) bytes of its set.
func classRun(re *syntax.Regexp) (int, byteSet) {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	n := 0
	switch re.Op {
	case syntax.OpPlus:
		n = 1
	case syntax.OpRepeat:
		n = re.Min
	default:
		return 0, byteSet{}
	}
	if sub := re.Sub[0]; sub.Op == syntax.OpCharClass && n > 0 {
		f, _ := first(sub)
		return min(n, maxRun), f
	}
	return 0, byteSet{}
}

// maxSet bounds a literal set, and maxSetLit its strings.
const (
	maxSet    = 16
	maxSetLit = 16
)

// classSet returns the bytes of a small ASCII character class as strings.
func classSet(re *syntax.Regexp) ([]string, bool) {
	var out []string
	for i := 0; i+1 < len(re.Rune); i += 2 {
		for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
			if exotic(r) {
				continue
			}
			if r >= utf8.RuneSelf || len(out) == maxSet/2 {
				return nil, false
			}
			out = append(out, string(r))
		}
	}
	return out, len(out) > 0
}

// prefixSet returns literals every match of the concatenation of res
// starts with, and whether they are whole matches (then what follows may
// extend them). It returns no literals when it cannot tell.
func prefixSet(res []*syntax.Regexp) ([]anchorLit, bool) {
	out := []anchorLit{{}}
	for _, re := range res {
		set, complete := prefixSetOf(re)
		if len(set) == 0 {
			if len(out) == 1 && out[0].s == "" {
				return nil, false
			}
			return out, false
		}
		var next []anchorLit
		for _, a := range out {
			for _, b := range set {
				if len(a.s)+len(b.s) > maxSetLit {
					return out, false
				}
				next = append(next, anchorLit{s: a.s + b.s, fold: a.fold || b.fold})
			}
		}
		if len(next) > maxSet {
			return out, false
		}
		out = next
		if !complete {
			return out, false
		}
	}
	return out, true
}

func prefixSetOf(re *syntax.Regexp) ([]anchorLit, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		if !isASCII(string(re.Rune)) {
			return nil, false
		}
		if re.Flags&syntax.FoldCase != 0 {
			return []anchorLit{{s: strings.ToLower(string(re.Rune)), fold: true}}, true
		}
		return []anchorLit{{s: string(re.Rune)}}, true
	case syntax.OpCharClass:
		set, ok := classSet(re)
		if !ok {
			return nil, false
		}
		var out []anchorLit
		for _, c := range set {
			out = append(out, anchorLit{s: c})
		}
		return out, true
	case syntax.OpCapture:
		return prefixSetOf(re.Sub[0])
	case syntax.OpConcat:
		return prefixSet(re.Sub)
	case syntax.OpAlternate:
		var out []anchorLit
		complete := true
		for _, sub := range re.Sub {
			set, c := prefixSetOf(sub)
			if len(set) == 0 || len(out)+len(set) > maxSet {
				return nil, false
			}
			out = append(out, set...)
			complete = complete && c
		}
		return out, complete
	}
	return nil, false
}

// better prefers fewer attempts: a literal of three bytes or more over a
// shorter one, then two bytes over one, then a narrower spread, then a
// longer literal, then fewer literals.
func better(a, b anchor) bool {
	la, lb := shortest(a), shortest(b)
	if (la >= 3) != (lb >= 3) {
		return la >= 3
	}
	if (la >= 2) != (lb >= 2) {
		return la >= 2
	}
	if sa, sb := a.maxOff-a.minOff, b.maxOff-b.minOff; sa != sb {
		return sa < sb
	}
	if la != lb {
		return la > lb
	}
	return len(a.lits) < len(b.lits)
}

func shortest(a anchor) int {
	n := -1
	for _, l := range a.lits {
		if n < 0 || len(l.s) < n {
			n = len(l.s)
		}
	}
	return n
}

// minLen returns the fewest bytes a match of re can span.
func minLen(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return len(string(re.Rune)) // a fold can only be longer
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return 0
		}
		return max(utf8.RuneLen(re.Rune[0]), 1)
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture, syntax.OpPlus:
		return minLen(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min * minLen(re.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			n += minLen(s)
		}
		return n
	case syntax.OpAlternate:
		n := -1
		for _, s := range re.Sub {
			if m := minLen(s); n < 0 || m < n {
				n = m
			}
		}
		return max(n, 0)
	}
	return 0 // star, quest, empty matches and assertions
}

// maxLen returns the most bytes a match of re can span, or -1 when it is
// unbounded.
func maxLen(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			n += maxRuneLen(r, re.Flags&syntax.FoldCase != 0)
		}
		return n
	case syntax.OpCharClass:
		n := 0
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if lo, hi := re.Rune[i], re.Rune[i+1]; lo != hi || !exotic(lo) {
				n = max(n, maxRuneLen(hi, false))
			}
		}
		return n
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax
	case syntax.OpCapture, syntax.OpQuest:
		return maxLen(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		if maxLen(re.Sub[0]) == 0 {
			return 0
		}
		return -1
	case syntax.OpRepeat:
		n := maxLen(re.Sub[0])
		if n == 0 {
			return 0
		}
		if n < 0 || re.Max < 0 {
			return -1
		}
		return re.Max * n
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			n = addLen(n, maxLen(s))
		}
		return n
	case syntax.OpAlternate:
		n := 0
		for _, s := range re.Sub {
			m := maxLen(s)
			if m < 0 {
				return -1
			}
			n = max(n, m)
		}
		return n
	}
	return 0 // empty matches and assertions
}

func addLen(a, b int) int {
	if a < 0 || b < 0 {
		return -1
	}
	return a + b
}

// maxRuneLen is the longest UTF-8 encoding of r, or of any rune that folds
// to r when fold is set. Invalid bytes match as U+FFFD one at a time, so 4
// bounds them too.
func maxRuneLen(r rune, fold bool) int {
	n := utf8.RuneLen(r)
	if n < 0 {
		n = utf8.UTFMax
	}
	if fold {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if !exotic(f) {
				n = max(n, utf8.RuneLen(f))
			}
		}
	}
	return n
}

// exotic reports whether r is one of the two non-ASCII runes that fold to
// ASCII letters: the long s (ſ, s) and the Kelvin sign (K, k). Plans ignore
// them (a class [a-z] under (?i) holds both); a value that holds either is
// screened on the whole value instead (findUpstream).
func exotic(r rune) bool { return r == 0x17F || r == 0x212A }

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
