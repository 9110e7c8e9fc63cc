package encoder

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"strings"
	"unicode"
)

// queryMarker ends the instruction of an instructed query. Hearth sends
// queries as "Instruct: <task>\nQuery:<query>" (Qwen3-Embedding's form,
// docs/design.md R-M8); a model reads the instruction as an instruction, while a mean
// of word vectors would mix its words into every query alike. So the
// encoder embeds only what follows the marker.
const (
	instructPrefix = "Instruct:"
	queryMarker    = "\nQuery:"
)

// Embed returns the sentence vector of text: the mean of the vectors of its
// known words that are not stopwords (all its known words when every one is
// a stopword), L2-normalised. A text with no known word at all gets a unit
// vector drawn from its sha256, so it is deterministic and unrelated to
// every other text. The second result counts the words read, known or not.
func (v *Vectors) Embed(text string) ([]float32, int) {
	text = QueryText(text)
	words := Words(text)
	sum := make([]float64, v.Dimensions)
	known := 0
	add := func(skipStop bool) {
		for _, w := range words {
			if skipStop && stopwords[w] {
				continue
			}
			if vec := v.words[w]; vec != nil {
				for i, x := range vec {
					sum[i] += float64(x)
				}
				known++
			}
		}
	}
	add(true)
	if known == 0 {
		add(false)
	}
	if known == 0 || !normalise(sum) {
		return hashVector(text, v.Dimensions), len(words)
	}
	out := make([]float32, len(sum))
	for i, x := range sum {
		out[i] = float32(x)
	}
	return out, len(words)
}

// QueryText strips an instruction in Hearth's query form and returns the
// query; other text comes back unchanged.
func QueryText(text string) string {
	if !strings.HasPrefix(text, instructPrefix) {
		return text
	}
	if _, q, ok := strings.Cut(text, queryMarker); ok {
		return q
	}
	return text
}

// Words splits text into lower-case words: runs of letters and digits, with
// camelCase and snake_case identifiers split into their parts
// (retryBackoff → retry backoff, memory_store → memory store), since the
// word vectors know English words, not identifiers.
func Words(text string) []string {
	var (
		out  []string
		cur  []rune
		prev rune
	)
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for _, r := range text {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			// A lower-case letter followed by an upper-case one starts a word.
			if unicode.IsUpper(r) && unicode.IsLower(prev) {
				flush()
			}
			cur = append(cur, r)
		default:
			flush()
		}
		prev = r
	}
	flush()
	return out
}

// normalise scales x to unit length in place; false when x has no length.
func normalise(x []float64) bool {
	var ss float64
	for _, f := range x {
		ss += f * f
	}
	n := math.Sqrt(ss)
	if n == 0 || math.IsNaN(n) || math.IsInf(n, 0) {
		return false
	}
	for i := range x {
		x[i] /= n
	}
	return true
}

// hashVector is a deterministic unit vector from text's sha256, for text
// the table knows no word of.
func hashVector(text string, dim int) []float32 {
	x := make([]float64, dim)
	seed := sha256.Sum256([]byte(text))
	for i := range x {
		var b [36]byte
		copy(b[:], seed[:])
		binary.LittleEndian.PutUint32(b[32:], uint32(i))
		h := sha256.Sum256(b[:])
		// Uniform in [-1, 1).
		x[i] = float64(binary.LittleEndian.Uint64(h[:8]))/math.MaxUint64*2 - 1
	}
	if !normalise(x) {
		x[0] = 1
	}
	out := make([]float32, dim)
	for i, f := range x {
		out[i] = float32(f)
	}
	return out
}

// stopwords are common English function words, left out of the mean the
// way wink's own sentence-similarity example leaves them out: in a mean of
// word vectors they pull every sentence toward the same point.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are as at
		be because been before being below between both but by can could did do does doing down
		during each few for from further had has have having he her here hers herself him himself
		his how i if in into is it its itself just me more most my myself no nor not now of off on
		once only or other our ours ourselves out over own same she should so some such than that
		the their theirs them themselves then there these they this those through to too under
		until up very was we were what when where which while who whom why will with would you
		your yours yourself yourselves s t d ll m o re ve y`) {
		m[w] = true
	}
	return m
}()
