package fulltext

import "strings"

// Holds reports, for each of stems (query words' stems, as Stem makes
// them), whether a word of texts has that stem. A word is stemmed only
// when it starts as one of the stems not yet found does (Porter changes a
// word's ending, never its start), so a long text costs little.
func Holds(stems []string, texts ...string) []bool {
	held := make([]bool, len(stems))
	left := len(stems)
	for _, text := range texts {
		if left == 0 {
			break
		}
		eachWord(text, func(w string) {
			if left == 0 {
				return
			}
			var lw, stem string
			for i, s := range stems {
				if held[i] {
					continue
				}
				if lw == "" {
					lw = strings.ToLower(w)
				}
				// Porter may turn a final y into i: the stem less its
				// last letter starts the word.
				if !strings.HasPrefix(lw, s[:max(len(s)-1, 0)]) {
					continue
				}
				if stem == "" {
					stem = Stem(lw)
				}
				if stem == s {
					held[i] = true
					left--
				}
			}
		})
	}
	return held
}
