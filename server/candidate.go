package server

import (
	"strings"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/storage"
)

// CheckCandidate validates a memory a model proposed (extraction, docs/design.md
// R-Z4) by the rules memory_store applies to a record: its type, a title
// of at most the title limit, content within the content limit, a
// confidence above 0 and at most 1, and a record that fits the records
// budget whole. The error names the field (type, title, content,
// confidence) and what is wrong, never the value. The screen is the
// caller's.
func (s *Server) CheckCandidate(typ, title, content string, confidence float64) error {
	if err := storage.CheckType("type", typ); err != nil {
		return err
	}
	if err := checkTitle("title", title); err != nil {
		return err
	}
	if err := checkContent("content", content); err != nil {
		return err
	}
	if err := storage.CheckConfidence("confidence", confidence); err != nil {
		return err
	}
	return checkRecordSize(s.size, "content", &hearthv1.Record{
		Namespace: strings.Repeat("n", 160), Type: typ, Title: title, Content: content, Confidence: confidence,
		Status: storage.StatusCandidate, Source: storage.SourceExtraction, Writer: strings.Repeat("w", 64),
	})
}
