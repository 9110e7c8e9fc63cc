package workers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hearth-memory/hearth/server/models"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
)

// Check validates a memory a model proposed by the rules memory_store
// applies to a record (type, title, content, confidence, record size),
// returning an error that names the field and never the value. The daemon
// passes (*server.Server).CheckCandidate.
type Check func(typ, title, content string, confidence float64) error

// MaxExtracted is how many memories one extraction stores; the model is
// asked for at most this many, and further ones are dropped.
const MaxExtracted = 20

// ExtractTypes are the types extraction stores: the durable types and note.
// A summary is the close's own business (summary_candidates).
var ExtractTypes = append(slices.Clone(storage.DurableTypes), storage.TypeNote)

// extractSchema is what an extraction reply must be. Types and lengths are
// checked by Hearth, memory by memory, so that one bad memory is dropped
// with its reason instead of failing the reply.
// It is compiled on first use, not at package init (docs/capture.md).
var extractSchema = sync.OnceValue(func() *models.Schema {
	return models.MustSchema("memories", `{
  "type": "object",
  "required": ["memories"],
  "additionalProperties": false,
  "properties": {
    "memories": {
      "type": "array",
      "items": {
        "type": "object",
        "required": ["type", "title", "content", "confidence"],
        "additionalProperties": false,
        "properties": {
          "type": {"type": "string", "description": "`+storage.Alternatives(ExtractTypes)+`"},
          "title": {"type": "string"},
          "content": {"type": "string"},
          "confidence": {"type": "number"}
        }
      }
    }
  }
}`)
})

// extractTask is the system prompt of extraction (models.System adds the
// fence rule).
var extractTask = `You extract durable knowledge from the notes and summary of one work session of a coding agent, as memories for its long-term memory.
A memory is one of these types:
- decision: a choice that was made, and why;
- constraint: a limit that must hold;
- requirement: something the work must do or provide;
- procedure: how to do a task, step by step;
- preference: how the user wants things done;
- note: a lasting fact worth keeping that is none of the above.
Leave out what only describes this session (what was being worked on, what comes next, what was tried and dropped), and never copy a password, token, key or other secret.
Each memory has: type (one of the six above); title (one short line); content (self-contained: it must make sense without the session, and keep every name, number, version, path and quoted phrase it relies on exactly as written); confidence (above 0 and at most 1: how firmly the session established it).
Give at most ` + fmt.Sprint(MaxExtracted) + ` memories, the most useful first, or none: {"memories":[]}.`

// extraction is the payload of an extraction job, as the session close
// queues it (server/session.go).
type extraction struct {
	OpID      string `json:"op_id"`
	SessionID string `json:"session_id"`
	Namespace string `json:"namespace"`
	Client    string `json:"client"`
	Summary   string `json:"summary"`
	Notes     string `json:"notes"`
	// Model and RerunOf are set by memory_extraction_rerun: the one model
	// to ask instead of the chain ("" for the chain), and the receipt the
	// job reruns.
	Model   string `json:"model,omitempty"`
	RerunOf string `json:"rerun_of,omitempty"`
}

// memory is one memory of an extraction reply.
type memory struct {
	Type       string  `json:"type"`
	Title      string  `json:"title"`
	Content    string  `json:"content"`
	Confidence float64 `json:"confidence"`
}

// errPayload marks a job whose payload cannot be read: no retry helps.
var errPayload = errors.New("extraction payload")

// Extract is the handler of extraction jobs (docs/design.md R-Z4): it asks the
// router's extraction chain for the memories in the job's summary and
// notes, fenced as data, and stores each memory that passes Check and the
// screen as a candidate with source extraction, written by the session's
// client, in the job's completion transaction. A memory that screens as a
// secret is dropped and its refusal audited (field and pattern); one that
// breaks a rule, repeats an earlier one or comes after MaxExtracted is
// dropped and audited with its reason. One audit row counts the result.
//
// A failed call fails the attempt (the job retries with backoff).
//
// Every call leaves an extraction receipt (storage.NewExtractionReceipt):
// the job's input and the model's reply, both screened, the ids kept and the
// memories refused with their reasons, written with the candidates; or, for
// a failed call, why, written at once: unparsable when a reply came back
// that did not fit the schema (the reply is kept), failed when none came.
// A call the budget kept from any server leaves none.
func Extract(r *models.Router, check Check, db *storage.DB) Handler {
	return func(ctx context.Context, job *storage.Job) (Effects, error) {
		var p extraction
		if err := json.Unmarshal([]byte(job.Payload), &p); err != nil {
			return nil, fmt.Errorf("%w: not a JSON object of the session close", errPayload)
		}
		if p.Namespace == "" || p.Client == "" {
			return nil, fmt.Errorf("%w: no namespace or client", errPayload)
		}
		var out struct {
			Memories []memory `json:"memories"`
		}
		var reply models.Reply
		receipt := storage.NewExtractionReceipt{JobID: job.ID, Namespace: p.Namespace, Client: p.Client,
			Input: screen.Redact(job.Payload), RerunOf: p.RerunOf}
		called := strings.TrimSpace(p.Summary+p.Notes) != ""
		if called {
			req := extractRequest(p)
			var err error
			if reply, err = r.Call(ctx, req, &out); err != nil {
				if failedReceipt(&receipt, err) && ctx.Err() == nil {
					if _, rerr := db.StoreExtractionReceipt(ctx, receipt); rerr != nil {
						return nil, errors.Join(err, rerr)
					}
				}
				return nil, err
			}
		}
		plan := planExtraction(p, out.Memories, check)
		return func(ctx context.Context, tx *storage.JobTx) error {
			kept, err := plan.apply(ctx, tx, reply)
			if err != nil || !called {
				return err
			}
			receipt.Outcome, receipt.Server, receipt.Model = storage.ReceiptKept, reply.Server, reply.Model
			receipt.Reply, receipt.Kept = screenReply(reply.Content), kept
			for _, d := range plan.drops {
				receipt.Refused = append(receipt.Refused, storage.Refused{Index: d.index, Reason: d.String()})
			}
			_, err = tx.StoreExtractionReceipt(ctx, receipt)
			return err
		}, nil
	}
}

// screenReply is a model's reply as its receipt keeps it: a JSON reply
// with each string value passed through screen.Redact (a value holding a
// secret or the no-store marker becomes its placeholder, the rest stays
// readable), any other reply with each secret replaced
// (screen.RedactSpans).
func screenReply(content []byte) screen.Text {
	var v any
	if json.Unmarshal(content, &v) != nil {
		return screen.RedactSpans(string(content))
	}
	var walk func(any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case string:
			return screen.Redact(t).String()
		case []any:
			for i := range t {
				t[i] = walk(t[i])
			}
		case map[string]any:
			for k, e := range t {
				t[k] = walk(e)
			}
		}
		return x
	}
	b, err := json.Marshal(walk(v))
	if err != nil {
		return screen.RedactSpans(string(content))
	}
	// Keys are the model's too: whatever survived is screened once more.
	return screen.RedactSpans(string(b))
}

// failedReceipt completes rec for a call that failed with err and reports
// whether a server was tried at all: unparsable when a model's reply did
// not fit the schema (the last such reply is kept), else failed.
func failedReceipt(rec *storage.NewExtractionReceipt, err error) bool {
	var attempts []*models.AttemptError
	var walk func(error)
	walk = func(e error) {
		if ae, ok := e.(*models.AttemptError); ok {
			attempts = append(attempts, ae)
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			if x := u.Unwrap(); x != nil {
				walk(x)
			}
		}
	}
	walk(err)
	if len(attempts) == 0 {
		return false
	}
	rec.Outcome = storage.ReceiptFailed
	last := attempts[len(attempts)-1]
	rec.Server, rec.Model = last.Server, last.Model
	for _, ae := range attempts {
		if ae.Reply != nil {
			rec.Outcome, rec.Server, rec.Model = storage.ReceiptUnparsable, ae.Server, ae.Model
			rec.Reply = screenReply(ae.Reply)
		}
	}
	rec.Error = screen.Redact(clip(err.Error(), 2000))
	return true
}

// extractMaxTokens caps an extraction reply: twenty memories of a few
// sentences each.
const extractMaxTokens = 4096

// extractRequest is the chat request for p: the task, then the summary and
// the notes, each fenced.
func extractRequest(p extraction) models.Request {
	var b strings.Builder
	b.WriteString("Extract the memories of this session.\n")
	if strings.TrimSpace(p.Summary) != "" {
		b.WriteString("\nThe session's summary:\n")
		b.WriteString(models.Fence("summary", p.Summary))
		b.WriteString("\n")
	}
	if strings.TrimSpace(p.Notes) != "" {
		b.WriteString("\nThe session's notes:\n")
		b.WriteString(models.Fence("notes", p.Notes))
		b.WriteString("\n")
	}
	user := b.String()
	return models.Request{
		Kind: models.Extraction, Model: p.Model, System: models.System(extractTask), User: user, Schema: extractSchema(),
		MaxTokens: extractMaxTokens, ContextTokens: contextTokens(len(extractTask)+len(user), extractMaxTokens),
	}
}

// contextTokens is the context window (Ollama's num_ctx) a prompt of
// promptBytes and a reply of maxTokens need: about three bytes a token,
// rounded up to 2048, at least 4096 and at most 32768. Ollama silently cuts
// a prompt longer than its window.
func contextTokens(promptBytes, maxTokens int) int {
	n := promptBytes/3 + maxTokens + 256
	n = (n + 2047) / 2048 * 2048
	return min(max(n, 4096), 32768)
}

// extractPlan is what an extraction writes: the candidates to store and
// the memories dropped, with their reasons.
type extractPlan struct {
	p       extraction
	total   int
	records []storage.NewRecord
	drops   []drop
}

// drop is a memory not stored, the index-th of the reply: a refusal of the
// screen (field and pattern), or a reason.
type drop struct {
	index          int
	field, pattern string
	reason         string
}

// String says why the memory was dropped, as its receipt keeps it.
func (d drop) String() string {
	if d.pattern != "" {
		return "screen: " + d.field + " matches " + d.pattern
	}
	return d.reason
}

// planExtraction checks and screens each memory of a reply.
func planExtraction(p extraction, mems []memory, check Check) *extractPlan {
	plan := &extractPlan{p: p, total: len(mems)}
	type key struct{ typ, title, content string }
	seen := map[key]int{}
	for i, m := range mems {
		field := fmt.Sprintf("memories[%d]", i)
		m.Title, m.Content = strings.TrimSpace(m.Title), strings.TrimSpace(m.Content)
		if len(plan.records) == MaxExtracted {
			plan.drops = append(plan.drops, drop{index: i, reason: fmt.Sprintf("%s: more than %d memories", field, MaxExtracted)})
			continue
		}
		if !slices.Contains(ExtractTypes, m.Type) {
			plan.drops = append(plan.drops, drop{index: i, reason: fmt.Sprintf("%s.type: %q is not one of %s", field, clip(m.Type, 40), strings.Join(ExtractTypes, ", "))})
			continue
		}
		if err := check(m.Type, m.Title, m.Content, m.Confidence); err != nil {
			plan.drops = append(plan.drops, drop{index: i, reason: field + "." + err.Error()})
			continue
		}
		title, err := screen.Check(field+".title", m.Title)
		if err == nil {
			var content screen.Text
			if content, err = screen.Check(field+".content", m.Content); err == nil {
				k := key{m.Type, m.Title, m.Content}
				if j, dup := seen[k]; dup {
					plan.drops = append(plan.drops, drop{index: i, reason: fmt.Sprintf("%s: repeats memories[%d]", field, j)})
					continue
				}
				seen[k] = i
				plan.records = append(plan.records, storage.NewRecord{
					Namespace: p.Namespace, Type: m.Type, Title: title, Content: content, Confidence: m.Confidence,
					Writer: p.Client, Source: storage.SourceExtraction, Status: storage.StatusCandidate,
				})
				continue
			}
		}
		var ref *screen.Refusal
		if errors.As(err, &ref) {
			plan.drops = append(plan.drops, drop{index: i, field: ref.Field, pattern: ref.Pattern})
		} else {
			plan.drops = append(plan.drops, drop{index: i, reason: field + ": " + err.Error()})
		}
	}
	return plan
}

// apply writes the plan in the job's completion transaction and returns
// the ids of the records it stored.
func (plan *extractPlan) apply(ctx context.Context, tx *storage.JobTx, reply models.Reply) ([]string, error) {
	ns := plan.p.Namespace
	var kept []string
	for _, nr := range plan.records {
		rec, err := tx.Store(ctx, nr)
		if err != nil {
			return nil, err
		}
		kept = append(kept, rec.ID)
	}
	for _, d := range plan.drops {
		var err error
		if d.pattern != "" {
			err = tx.Refuse(ctx, storage.RefusalEntry{Client: storage.SystemClient, Action: storage.ActionRefuseScreen,
				Namespace: ns, Field: d.field, Pattern: d.pattern})
		} else {
			err = tx.Audit(ctx, storage.AuditEntry{Client: storage.SystemClient, Action: storage.ActionExtractDrop,
				Namespace: ns, Detail: screen.Redact(d.reason)})
		}
		if err != nil {
			return nil, err
		}
	}
	detail := fmt.Sprintf("session close %s: stored %d of %d memories as candidates", plan.p.OpID, len(plan.records), plan.total)
	if reply.Server != "" {
		detail += fmt.Sprintf(" (model %s on %s)", reply.Model, reply.Server)
	} else {
		detail += " (nothing to read)"
	}
	return kept, tx.Audit(ctx, storage.AuditEntry{Client: storage.SystemClient, Action: storage.ActionExtract,
		Namespace: ns, Detail: screen.Redact(detail)})
}

// clip cuts s to n runes, marking the cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
