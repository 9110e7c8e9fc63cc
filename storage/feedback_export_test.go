package storage

import "github.com/hearth-memory/hearth/storage/fulltext"

// Feedback is feedback for text's words and their synonyms, for the
// benchmarks of package storage_test.
func Feedback(text string, hits []Hit) []Hit {
	return feedback(fulltext.Expand(fulltext.QueryWords(text)), hits)
}
