package storage

// Feedback is feedback for text's words and their synonyms, for the
// benchmarks of package storage_test.
func Feedback(text string, hits []Hit) []Hit { return feedback(expandQuery(queryWords(text)), hits) }
