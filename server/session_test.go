package server

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/storage"
	"google.golang.org/protobuf/encoding/protojson"
)

// FuzzCheckCloseRequest feeds arbitrary JSON to the close validator: it may
// not panic, and an accepted close holds the limits it promises.
func FuzzCheckCloseRequest(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"session_id":"s1","op_id":"abcdefgh","summary":"Did X.","notes":"n"}`,
		`{"session_id":"s\u0000","op_id":"abcdefgh"}`,
		`{"session_id":"s1","op_id":"abc#defgh"}`,
		`{"session_id":"s1","op_id":"abcdefgh","summary":"line one\nline two","namespace":"github/acme/api"}`,
	} {
		f.Add(s)
	}
	opts := protojson.UnmarshalOptions{DiscardUnknown: true}
	f.Fuzz(func(t *testing.T, s string) {
		var r hearthv1.CloseRequest
		if opts.Unmarshal([]byte(s), &r) != nil || checkCloseRequest(testSizer(t), &r) != nil {
			return
		}
		switch {
		case !storage.ValidOpID(r.GetOpId()):
			t.Fatalf("accepted op_id %q", r.GetOpId())
		case strings.TrimSpace(r.GetSessionId()) == "" || utf8.RuneCountInString(r.GetSessionId()) > maxSessionIDChars:
			t.Fatalf("accepted session_id %q", r.GetSessionId())
		case len(r.GetSummary()) > maxContentBytes || len(r.GetNotes()) > maxNotesBytes:
			t.Fatalf("accepted an oversized close")
		}
		if title := summaryTitle(r.GetSummary()); utf8.RuneCountInString(title) > maxSummaryTitleChars || !utf8.ValidString(title) ||
			(strings.TrimSpace(r.GetSummary()) != "" && title == "") {
			t.Fatalf("summaryTitle(%q) = %q", r.GetSummary(), title)
		}
	})
}

func TestCheckCloseRequest(t *testing.T) {
	ok := func() *hearthv1.CloseRequest {
		return &hearthv1.CloseRequest{SessionId: "s1", OpId: "op-12345", Summary: "Did X.", Notes: "n"}
	}
	if err := checkCloseRequest(testSizer(t), ok()); err != nil {
		t.Fatalf("valid close: %v", err)
	}
	for _, tt := range []struct {
		field string
		edit  func(*hearthv1.CloseRequest)
	}{
		{"session_id", func(r *hearthv1.CloseRequest) { r.SessionId = " " }},
		{"session_id", func(r *hearthv1.CloseRequest) { r.SessionId = strings.Repeat("s", maxSessionIDChars+1) }},
		{"session_id", func(r *hearthv1.CloseRequest) { r.SessionId = "a\nb" }},
		{"op_id", func(r *hearthv1.CloseRequest) { r.OpId = "" }},
		{"op_id", func(r *hearthv1.CloseRequest) { r.OpId = "1234567" }},
		{"op_id", func(r *hearthv1.CloseRequest) { r.OpId = strings.Repeat("a", 65) }},
		{"op_id", func(r *hearthv1.CloseRequest) { r.OpId = "op#12345" }},
		{"summary", func(r *hearthv1.CloseRequest) { r.Summary = strings.Repeat("s", maxContentBytes+1) }},
		{"summary", func(r *hearthv1.CloseRequest) { r.Summary = "\xff" }},
		{"notes", func(r *hearthv1.CloseRequest) { r.Notes = strings.Repeat("n", maxNotesBytes+1) }},
	} {
		r := ok()
		tt.edit(r)
		err := checkCloseRequest(testSizer(t), r)
		if err == nil || fieldOf(t, err) != tt.field {
			t.Errorf("%+v: got %v, want an error naming %s", r, err, tt.field)
		}
	}
}

func TestSummaryTitle(t *testing.T) {
	long := strings.Repeat("word ", 40)
	for in, want := range map[string]string{
		"Did X.":                         "Did X.",
		"  First line.\nSecond line.":    "First line.",
		"\n\nTabs\tand  spaces here\r\n": "Tabs and spaces here",
		long:                             strings.TrimSpace(strings.Repeat("word ", 19)) + "…",
		strings.Repeat("é", 150):         strings.Repeat("é", 99) + "…",
	} {
		if got := summaryTitle(in); got != want {
			t.Errorf("summaryTitle(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestExtraction_Payload(t *testing.T) {
	e := extraction{OpID: "op-12345", SessionID: "s1", Namespace: "global", Client: "claude-code", Summary: "Did X.", Notes: "n"}
	p, refused, err := e.payload()
	if err != nil || refused != "" {
		t.Fatalf("payload: %v %q", err, refused)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(p.String()), &got); err != nil || got["summary"] != "Did X." || got["notes"] != "n" {
		t.Errorf("payload = %s (%v)", p.String(), err)
	}

	// Notes that fail the screen in the payload are dropped, the summary kept.
	e.Notes = "keep this do-not-store"
	p, refused, err = e.payload()
	if err != nil || refused != "no-store-marker" || strings.Contains(p.String(), "keep this") || !strings.Contains(p.String(), "Did X.") {
		t.Errorf("payload = %s, refused %q, err %v", p.String(), refused, err)
	}

	// A summary that fails there refuses, naming summary.
	e.Summary, e.Notes = "do-not-store", ""
	if _, _, err := e.payload(); err == nil || !strings.Contains(err.Error(), "summary") {
		t.Errorf("summary refusal = %v", err)
	}
}
