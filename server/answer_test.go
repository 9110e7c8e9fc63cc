package server

import (
	"strings"
	"testing"
	"unicode/utf8"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/storage"
	"google.golang.org/protobuf/encoding/protojson"
)

// FuzzCheckAnswerRequests feeds arbitrary JSON to the answer service's
// validators and the session id checks: none may panic, and what they
// accept holds their limits.
func FuzzCheckAnswerRequests(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"text":"How do we run the migrations?","namespace":"github/acme/api"}`,
		`{"question_id":"01JD3M5ZK9Q8W7E6R5T4Y3X2V1"}`,
		`{"question_id":"01JD3M5ZK9Q8W7E6R5T4Y3X2V1","text":"x"}`,
		`{"text":"what is it"}`,
		`{"limit":51,"every_namespace":true}`,
		`{"query":"q","session_id":"\u0007"}`,
		`{"ids":["01JD3M5ZK9Q8W7E6R5T4Y3X2V1"],"session_id":"s-1"}`,
	} {
		f.Add(s)
	}
	opts := protojson.UnmarshalOptions{DiscardUnknown: true}
	f.Fuzz(func(t *testing.T, s string) {
		var qr hearthv1.QuestionsRequest
		if opts.Unmarshal([]byte(s), &qr) == nil && checkQuestionsRequest(&qr) == nil && int(qr.GetLimit()) > maxQuestions {
			t.Fatalf("accepted limit %d", qr.GetLimit())
		}
		var ar hearthv1.AnswerRequest
		if opts.Unmarshal([]byte(s), &ar) == nil && checkAnswerRequest(&ar) == nil {
			byID := ar.GetQuestionId() != "" && idPattern.MatchString(ar.GetQuestionId()) && ar.GetText() == ""
			byText := ar.GetQuestionId() == "" && utf8.ValidString(ar.GetText()) &&
				utf8.RuneCountInString(ar.GetText()) <= maxAnswerTextChars && storage.QuestionKey(ar.GetText()) != ""
			if !byID && !byText {
				t.Fatalf("accepted a bad answer request: %s", s)
			}
		}
		var add hearthv1.AddQuestionRequest
		if opts.Unmarshal([]byte(s), &add) == nil && checkQuestionText("text", add.GetText(), maxQuestionChars) == nil {
			if utf8.RuneCountInString(add.GetText()) > maxQuestionChars || storage.QuestionKey(add.GetText()) == "" {
				t.Fatalf("accepted a bad question: %s", s)
			}
		}
		var se hearthv1.SearchRequest
		if opts.Unmarshal([]byte(s), &se) == nil && checkSearchRequest(&se) == nil {
			id := se.GetSessionId()
			if len(id) > maxSearchSessID || !utf8.ValidString(id) ||
				strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				t.Fatalf("accepted a bad session id: %s", s)
			}
		}
	})
}

func TestCheckAnswerRequest(t *testing.T) {
	for _, tt := range []struct {
		name  string
		req   *hearthv1.AnswerRequest
		field string // "" when valid
	}{
		{"OKByID", &hearthv1.AnswerRequest{QuestionId: "01JD3M5ZK9Q8W7E6R5T4Y3X2V1"}, ""},
		{"OKByText", &hearthv1.AnswerRequest{Text: "how do we deploy?"}, ""},
		{"OKLongest", &hearthv1.AnswerRequest{Text: strings.Repeat("é", maxAnswerTextChars)}, ""},
		{"ErrNeither", &hearthv1.AnswerRequest{}, "question_id"},
		{"ErrBoth", &hearthv1.AnswerRequest{QuestionId: "01JD3M5ZK9Q8W7E6R5T4Y3X2V1", Text: "deploy"}, "question_id"},
		{"ErrBadID", &hearthv1.AnswerRequest{QuestionId: "nope"}, "question_id"},
		{"ErrStopWords", &hearthv1.AnswerRequest{Text: "what is it?"}, "text"},
		{"ErrTooLong", &hearthv1.AnswerRequest{Text: strings.Repeat("é", maxAnswerTextChars+1)}, "text"},
		{"ErrUTF8", &hearthv1.AnswerRequest{Text: "\xff deploy"}, "text"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := checkAnswerRequest(tt.req)
			var fe *fieldError
			switch {
			case tt.field == "" && err != nil:
				t.Errorf("got %v, want valid", err)
			case tt.field != "" && (err == nil || !asField(err, &fe) || fe.field != tt.field):
				t.Errorf("got %v, want an error naming %s", err, tt.field)
			}
		})
	}
}

func TestCheckQuestionsRequest(t *testing.T) {
	if err := checkQuestionsRequest(&hearthv1.QuestionsRequest{Limit: uint32(maxQuestions)}); err != nil {
		t.Errorf("OK: %v", err)
	}
	var fe *fieldError
	if err := checkQuestionsRequest(&hearthv1.QuestionsRequest{Limit: uint32(maxQuestions) + 1}); !asField(err, &fe) || fe.field != "limit" {
		t.Errorf("ErrLimit: %v", err)
	}
	if err := checkQuestionsRequest(&hearthv1.QuestionsRequest{EveryNamespace: true, Namespace: "global"}); !asField(err, &fe) || fe.field != "every_namespace" {
		t.Errorf("ErrBoth: %v", err)
	}
}

func asField(err error, fe **fieldError) bool {
	e, ok := err.(*fieldError)
	*fe = e
	return ok
}
