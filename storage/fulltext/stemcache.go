package fulltext

import "sync"

// StemCache maps words to their stems, up to maxCachedStems at a time: the
// store keeps in one the index tokens FTS5's porter tokenizer made of query
// words, learned from the queries hearth_rank scores, so that Search can
// look up a word's frequency before it queries; stemMemo, the stems Go
// computed (Stem) for feedback. Its zero value is empty and ready; it is
// safe for concurrent use.
type StemCache struct {
	mu sync.Mutex
	m  map[string]string
}

// maxCachedStems bounds a StemCache: when full, it is emptied before it
// learns another stem.
const maxCachedStems = 1 << 16

// Learn remembers that word stems to token.
func (c *StemCache) Learn(word, token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedStems {
		c.m = map[string]string{}
	}
	c.m[word] = token
}

// Get returns the stem learned for word, and whether there is one.
func (c *StemCache) Get(word string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.m[word]
	return t, ok
}
