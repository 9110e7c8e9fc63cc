package server

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/budget"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
)

type sessionService struct {
	hearthv1.UnimplementedSessionServiceServer
	*Server
}

var _ hearthv1.SessionServiceServer = (*sessionService)(nil)

// Limits on a session close. The summary may become a record, so it obeys
// the record limits; the notes only feed extraction.
const (
	maxSummaryTitleChars = 100
)

// checkCloseRequest validates everything about a close but the screen and
// the namespace (which resolve checks).
func checkCloseRequest(sz *budget.Sizer, r *hearthv1.CloseRequest) error {
	sid := r.GetSessionId()
	if err := checkBounded("session_id", sid, false, maxSessionIDChars); err != nil {
		return err
	}
	if strings.TrimSpace(sid) == "" {
		return invalid("session_id", "is required")
	}
	if r.GetOpId() == "" {
		return invalid("op_id", "is required: a unique id for this close, 8-64 of A-Za-z0-9_-")
	}
	if err := storage.CheckOpID("op_id", r.GetOpId()); err != nil {
		return err
	}
	if s := r.GetSummary(); s != "" {
		if err := checkText("summary", s, true); err != nil {
			return err
		}
		if len(s) > maxContentBytes {
			return invalid("summary", "is %d bytes; at most %d", len(s), maxContentBytes)
		}
		if strings.TrimSpace(s) != "" {
			if err := checkRecordSize(sz, "summary", &hearthv1.Record{
				Namespace: strings.Repeat("n", 160), Type: storage.TypeSummary, Title: summaryTitle(s), Content: s,
				Status: storage.StatusCandidate, Source: storage.SourceSession, Writer: strings.Repeat("w", 64),
			}); err != nil {
				return err
			}
		}
	}
	if err := checkText("notes", r.GetNotes(), true); err != nil {
		return err
	}
	if n := r.GetNotes(); len(n) > maxNotesBytes {
		return invalid("notes", "is %d bytes; at most %d", len(n), maxNotesBytes)
	}
	return nil
}

// summaryTitle is the title of a summary candidate: the summary's first
// line, cut at a word to maxSummaryTitleChars.
func summaryTitle(summary string) string {
	line := strings.TrimSpace(summary)
	if i := strings.IndexAny(line, "\r\n"); i >= 0 {
		line = line[:i]
	}
	line = strings.Join(strings.Fields(line), " ")
	if utf8.RuneCountInString(line) <= maxSummaryTitleChars {
		return line
	}
	r := []rune(line)[:maxSummaryTitleChars-1]
	if i := strings.LastIndexByte(string(r), ' '); i > maxSummaryTitleChars/2 {
		return string(r)[:i] + "…"
	}
	return string(r) + "…"
}

// extraction is the payload of a session close's extraction job (docs/design.md R-Z4).
type extraction struct {
	OpID      string `json:"op_id"`
	SessionID string `json:"session_id"`
	Namespace string `json:"namespace"`
	Client    string `json:"client"`
	Summary   string `json:"summary,omitempty"`
	Notes     string `json:"notes,omitempty"`
}

// payload screens the job payload as a whole, as it will be stored. The
// parts passed the screen alone, but their JSON encoding is screened again;
// should it be refused, the notes go first (they may be refused, the call
// goes on) and then the summary (whose refusal refuses the call).
func (e extraction) payload() (p screen.Text, notesRefused string, err error) {
	for {
		b, merr := json.Marshal(e)
		if merr != nil {
			return screen.Text{}, "", merr
		}
		field := "summary"
		if e.Notes != "" {
			field = "notes"
		}
		p, err = screen.Check(field, string(b))
		var ref *screen.Refusal
		if !errors.As(err, &ref) || field == "summary" {
			return p, notesRefused, err
		}
		e.Notes, notesRefused = "", ref.Pattern
	}
}

// Close ends a session exactly once per op_id (docs/design.md R-Z1..R-Z3, R-S4).
func (s *sessionService) Close(ctx context.Context, r *hearthv1.CloseRequest) (*hearthv1.CloseResponse, error) {
	who, err := writer(ctx)
	if err != nil {
		return nil, err
	}
	// Until resolve has screened it, the caller's namespace is not audited.
	if err := checkCloseRequest(s.size, r); err != nil {
		return nil, s.fail(ctx, "", "", err)
	}
	home, _, err := s.resolve("namespace", r.GetNamespace(), r.GetRemote(), nil)
	if err != nil {
		return nil, s.fail(ctx, "", "", err)
	}
	c := storage.SessionClose{
		OpID:      r.GetOpId(),
		Client:    who,
		Digest:    storage.CloseDigest(who, r.GetOpId(), r.GetSessionId(), home, r.GetSummary(), r.GetNotes()),
		Namespace: home,
		Retention: time.Duration(s.opts.RetentionDeletedDays) * 24 * time.Hour,
	}
	if c.SessionID, err = screen.Check("session_id", r.GetSessionId()); err != nil {
		return nil, s.fail(ctx, home, "", err)
	}
	// The op_id is kept in the receipt, the audit and the extraction job:
	// a token given as one is refused like any screened field.
	if _, err = screen.Check("op_id", r.GetOpId()); err != nil {
		return nil, s.fail(ctx, home, "", err)
	}

	// A summary that screens as a secret refuses the whole call; refused
	// notes are dropped and the close goes on.
	job := extraction{OpID: c.OpID, SessionID: r.GetSessionId(), Namespace: home, Client: who}
	if sum := r.GetSummary(); strings.TrimSpace(sum) != "" {
		text, err := screen.Check("summary", sum)
		if err != nil {
			return nil, s.fail(ctx, home, "", err)
		}
		c.SummaryKept = true
		if s.opts.SummaryCandidates {
			title, err := screen.Check("summary", summaryTitle(sum))
			if err != nil {
				// Cutting a screened text made it look like a secret.
				title, _ = screen.Check("summary", "Session summary")
			}
			c.Summary = &storage.NewRecord{
				Type: storage.TypeSummary, Title: title, Content: text, Confidence: defaultConfidence,
				Source: storage.SourceSession, Status: storage.StatusCandidate,
			}
		} else {
			job.Summary = sum
		}
	}
	if notes := r.GetNotes(); strings.TrimSpace(notes) != "" {
		var ref *screen.Refusal
		if _, err := screen.Check("notes", notes); errors.As(err, &ref) {
			c.NotesRefusedPattern = ref.Pattern
		} else if err != nil {
			return nil, s.fail(ctx, home, "", err)
		} else {
			job.Notes = notes
		}
	}
	if job.Summary != "" || job.Notes != "" {
		p, refused, err := job.payload()
		if err != nil {
			return nil, s.fail(ctx, home, "", err)
		}
		if refused != "" {
			c.NotesRefusedPattern = refused
		}
		if job.Summary != "" || refused == "" {
			c.Extraction = &storage.NewJob{Kind: storage.KindExtraction, Payload: p}
		}
	}

	rec, replayed, err := s.db.CloseSession(ctx, c)
	if err != nil {
		return nil, s.failClose(ctx, home, err)
	}
	receipt := receiptToProto(rec)
	// With no model server configured an extraction job waits, visible in
	// memory_status, until one is.
	receipt.ExtractionWaiting = receipt.GetJobId() != "" && s.opts.OllamaURL == "" && s.opts.OllamaFallbackURL == "" && len(s.opts.OllamaDirectURLs) == 0
	return &hearthv1.CloseResponse{Receipt: receipt, Replayed: replayed}, nil
}

// failClose audits a refused op_id (taken by another close, or expired)
// and maps err; other errors go to fail.
func (s *sessionService) failClose(ctx context.Context, ns string, err error) error {
	r := storage.RefusalEntry{Client: client(ctx), Namespace: ns, Detail: err.Error()}
	switch storage.ErrorCode(err) {
	case storage.Exists:
		r.Action = storage.ActionRefuseConflict
	case storage.Expired:
		r.Action = storage.ActionRefuseExpired
	default:
		return s.fail(ctx, ns, "", err)
	}
	s.refuse(ctx, r)
	return toStatus(ctx, s.log, err)
}

// Receipt.summary: what became of a close's summary.
const (
	summaryCandidate  = "candidate"
	summaryExtraction = "extraction"
	summaryNotKept    = "not_kept"
)

func receiptToProto(r *storage.Receipt) *hearthv1.Receipt {
	summary := summaryNotKept
	switch {
	case r.SummaryID != "":
		summary = summaryCandidate
	case r.SummaryKept && r.JobID != "":
		summary = summaryExtraction
	}
	return &hearthv1.Receipt{
		Summary:             summary,
		OpId:                r.OpID,
		SessionId:           r.SessionID,
		Namespace:           r.Namespace,
		ClosedAt:            ts(r.ClosedAt),
		SummaryId:           r.SummaryID,
		SummaryKept:         r.SummaryKept,
		NotesRefused:        r.NotesRefused,
		NotesRefusedPattern: r.NotesRefusedPattern,
		JobId:               r.JobID,
	}
}
