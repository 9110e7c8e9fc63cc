package server

import (
	"context"
	"strings"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// answerService serves the questions sessions ask and their standing
// answers (docs/design.md R-W). Recording what was asked happens on the search and get
// paths (recordAsk, recordUse); answers are written by the worker
// (server/answers, server/workers).
type answerService struct {
	hearthv1.UnimplementedAnswerServiceServer
	*Server
}

var _ hearthv1.AnswerServiceServer = (*answerService)(nil)

// implicitSession is the session key of a call that names none: its
// client's calls of one UTC day are one session.
const implicitSession = "~day:"

// sessionKey returns the session a search or get belongs to: its
// session_id, or the day's implicit session.
func (s *Server) sessionKey(id string) string {
	if id != "" {
		return id
	}
	return implicitSession + s.db.Now().UTC().Format("2006-01-02")
}

// checkSessionID checks an optional session id: at most max bytes of one
// line of UTF-8 (checkText).
func checkSessionID(field, id string, max int) error {
	if len(id) > max {
		return invalid(field, "is longer than %d bytes", max)
	}
	return checkText(field, id, false)
}

// recordAsk records a search for the demand signal (docs/design.md R-W1, R-W2) with
// its full-text hits, at most limit of them: never a recall search, never a
// query that screens as a secret. It only queues; the writer records it
// later, so the search does not wait.
func (s *Server) recordAsk(ctx context.Context, r *hearthv1.SearchRequest, home string, fts []storage.Hit, limit int) {
	// A recall search is not a question asked; nor is a search of every
	// namespace, which has no scope for a question to live in.
	if r.GetRecall() || home == "" {
		return
	}
	q, err := screen.Check("query", r.GetQuery())
	if err != nil {
		return
	}
	hits := make([]string, 0, min(limit, len(fts)))
	for _, h := range fts[:min(limit, len(fts))] {
		hits = append(hits, h.Record.ID)
	}
	s.db.RecordAsk(storage.Ask{Namespace: home, Client: client(ctx), Session: s.sessionKey(r.GetSessionId()), Query: q, Hits: hits})
}

// recordUse marks the session's recorded searches whose full-text hits
// memory_get returned as used.
func (s *Server) recordUse(ctx context.Context, session string, ids []string) {
	if len(ids) == 0 {
		return
	}
	s.db.RecordUse(storage.AskUse{Client: client(ctx), Session: s.sessionKey(session), IDs: ids})
}

func checkQuestionsRequest(r *hearthv1.QuestionsRequest) error {
	if int(r.GetLimit()) > maxQuestions {
		return invalid("limit", "must be at most %d", maxQuestions)
	}
	if r.GetEveryNamespace() && (r.GetNamespace() != "" || r.GetRemote() != "") {
		return invalid("every_namespace", "give every_namespace or a namespace (or remote), not both")
	}
	return nil
}

// Questions ranks the questions of a scope chain (or of every namespace) by
// demand, with the figures the demand is made of (docs/design.md R-W1, R-W2).
func (a *answerService) Questions(ctx context.Context, r *hearthv1.QuestionsRequest) (*hearthv1.QuestionsResponse, error) {
	if err := checkQuestionsRequest(r); err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	var chain []string
	if !r.GetEveryNamespace() {
		_, scopes, err := a.resolve("namespace", r.GetNamespace(), r.GetRemote(), nil)
		if err != nil {
			return nil, toStatus(ctx, a.log, err)
		}
		chain = scopes
	}
	limit := int(r.GetLimit())
	if limit == 0 {
		limit = defaultQuestions
	}
	qs, err := a.db.Questions(ctx, storage.QuestionsQuery{Namespaces: chain, Limit: limit})
	if err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	resp := &hearthv1.QuestionsResponse{Questions: make([]*hearthv1.Question, len(qs))}
	for i, q := range qs {
		resp.Questions[i] = questionToProto(q)
	}
	return resp, nil
}

// checkQuestionText checks a question's words: present, UTF-8, at most max
// characters.
func checkQuestionText(field, text string, max int) error {
	if err := checkBounded(field, text, false, max); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(text) == "":
		return invalid(field, "is required")
	case storage.QuestionKey(text) == "":
		return invalid(field, "has no word that says what it asks (only stop words)")
	}
	return nil
}

// AddQuestion declares a question in a namespace: validate, screen, store.
func (a *answerService) AddQuestion(ctx context.Context, r *hearthv1.AddQuestionRequest) (*hearthv1.AddQuestionResponse, error) {
	who, err := writer(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkQuestionText("text", r.GetText(), maxQuestionChars); err != nil {
		return nil, a.fail(ctx, "", "", err)
	}
	home, _, err := a.resolve("namespace", r.GetNamespace(), r.GetRemote(), nil)
	if err != nil {
		return nil, a.fail(ctx, "", "", err)
	}
	text, err := screen.Check("text", r.GetText())
	if err != nil {
		return nil, a.fail(ctx, home, "", err)
	}
	q, err := a.db.DeclareQuestion(ctx, home, text, who)
	if err != nil {
		return nil, a.fail(ctx, home, "", err)
	}
	return &hearthv1.AddQuestionResponse{Question: questionToProto(q)}, nil
}

func checkAnswerRequest(r *hearthv1.AnswerRequest) error {
	if r.GetQuestionId() != "" {
		if !idPattern.MatchString(r.GetQuestionId()) {
			return invalid("question_id", "is not a question id (26 characters, e.g. 01JD3M5ZK9Q8W7E6R5T4Y3X2V1)")
		}
		if r.GetText() != "" {
			return invalid("question_id", "give question_id or text, not both")
		}
		return nil
	}
	if r.GetText() == "" {
		return invalid("question_id", "is required (or give text, the question in words)")
	}
	return checkQuestionText("text", r.GetText(), maxAnswerTextChars)
}

// Answer returns a question's standing answer: one database read, no
// retrieval and no model call (docs/design.md R-W4); stale compares the stored basis
// with the cited records as they are now (R-W5).
func (a *answerService) Answer(ctx context.Context, r *hearthv1.AnswerRequest) (*hearthv1.AnswerResponse, error) {
	if err := checkAnswerRequest(r); err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	var (
		q   *storage.Question
		err error
	)
	if id := r.GetQuestionId(); id != "" {
		q, err = a.db.Question(ctx, id)
	} else {
		var chain []string
		if _, chain, err = a.resolve("namespace", r.GetNamespace(), r.GetRemote(), nil); err == nil {
			q, err = a.db.FindQuestion(ctx, chain, r.GetText())
		}
	}
	if err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	resp := &hearthv1.AnswerResponse{Question: questionToProto(q)}
	if q.Answer != nil {
		resp.Answer = answerToProto(q.Answer)
	}
	return resp, nil
}

func questionToProto(q *storage.Question) *hearthv1.Question {
	p := &hearthv1.Question{
		Id: q.ID, Namespace: q.Namespace, Text: q.Text, Asks: uint32(q.Asks), Demand: storage.Round4(q.Demand),
		AnswerState: q.AnswerState(), Sessions: uint32(q.Sessions), Clients: uint32(q.Clients), Used: uint32(q.Used),
		UsedShare: storage.Round4(q.UsedShare()), Declared: q.Declared,
	}
	if !q.LastAskedAt.IsZero() {
		p.LastAskedAt = timestamppb.New(q.LastAskedAt)
	}
	if q.Answer != nil {
		p.AnswerKind = q.Answer.Kind
	}
	return p
}

func answerToProto(a *storage.Answer) *hearthv1.Answer {
	p := &hearthv1.Answer{
		Text: a.Text, SourceIds: a.SourceIDs, Basis: a.Basis, Stale: a.Stale, GeneratedAt: timestamppb.New(a.GeneratedAt),
		Extractive: a.Kind == storage.AnswerExtractive, Kind: a.Kind, Model: a.Model,
	}
	for _, s := range a.Sentences {
		p.Sentences = append(p.Sentences, &hearthv1.AnswerSentence{Text: s.Text, SourceIds: s.SourceIDs})
	}
	return p
}
