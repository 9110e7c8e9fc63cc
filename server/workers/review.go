package workers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hearth-memory/hearth/server/models"
	"github.com/hearth-memory/hearth/server/retrieval"
	"github.com/hearth-memory/hearth/server/scope"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
)

// Review verdicts a model may propose (docs/design.md R-J2).
const (
	VerdictDuplicate    = "duplicate"
	VerdictSessionState = "session-state"
	VerdictKeep         = "keep"
)

// Review limits.
const (
	// MaxReviewed is how many candidates, oldest first, one review reads;
	// the rest wait for the next night.
	MaxReviewed = 500
	// Neighbours is how many of its nearest records a candidate is shown
	// with.
	Neighbours = 5
	// reviewAttempts limits the tries of one review run, like maintenance.
	reviewAttempts = 3
	// reviewMaxTokens caps a verdict reply.
	reviewMaxTokens = 512
	// maxReasonChars cuts the model's reason in the audit.
	maxReasonChars = 200
)

// It is compiled on first use, not at package init (docs/capture.md).
var reviewSchema = sync.OnceValue(func() *models.Schema {
	return models.MustSchema("verdict", `{
  "type": "object",
  "required": ["verdict", "duplicate_of", "reason"],
  "additionalProperties": false,
  "properties": {
    "verdict": {"enum": ["duplicate", "session-state", "keep"]},
    "duplicate_of": {"type": "string", "maxLength": 64},
    "reason": {"type": "string", "maxLength": 1000}
  }
}`)
})

var reviewTask = `You review one candidate memory of a coding agent's long-term memory before it is kept, against the stored records nearest to it.
Answer with one verdict:
- "duplicate": one of the shown records already says everything the candidate says, every name, number, version, path and quoted phrase included. Put that record's id (the label of its data block) in duplicate_of.
- "session-state": the candidate only describes the passing state of one work session (what was being done, what comes next) and holds nothing worth keeping.
- "keep": anything else. When in doubt, keep.
duplicate_of is "" unless the verdict is duplicate. reason is one short sentence.`

// verdict is a review reply.
type verdict struct {
	Verdict     string `json:"verdict"`
	DuplicateOf string `json:"duplicate_of"`
	Reason      string `json:"reason"`
}

// proposal is what the review learned of one candidate before applying:
// the records shown, and the model's verdict or the failed call.
type proposal struct {
	cand   *storage.Record
	shown  []string
	v      verdict
	model  string
	err    error // the call failed
	missed bool  // not reviewed: no live server was left
}

// reviewer runs nightly reviews.
type reviewer struct {
	router   *models.Router
	db       *storage.DB
	pipeline *retrieval.Pipeline
	scopes   *scope.Resolver
}

// Review is the handler of review jobs (docs/design.md R-J2, R-M4). It reads the
// candidates (at most MaxReviewed, oldest first) and shows each to the
// router's review chain with its Neighbours nearest live records (the
// retrieval pipeline over its scope chain), fenced as data, on
// max(2, live servers) workers at once. The verdicts are applied in the
// job's completion transaction, each only when its guard holds against the
// records as they are then:
//
//   - duplicate: the named record was shown, is live and is not the
//     candidate, is not a session summary standing in for another type, and
//     holds every number, version, path, identifier and quoted phrase of the
//     candidate → the candidate is forgotten;
//   - session-state: the candidate came from session notes (source
//     extraction) or has a non-durable type → forgotten;
//   - keep, a refusing guard, or a failed call → the candidate stays.
//
// A candidate that changed since it was shown stays too. Every verdict,
// refusal and failed call is audited with its reason, and one row counts
// the run. When no server is live any more, the candidates left are not
// reviewed (counted) and wait for the next run.
func Review(r *models.Router, db *storage.DB, scopes *scope.Resolver, pipeline *retrieval.Pipeline) Handler {
	rv := &reviewer{router: r, db: db, pipeline: pipeline, scopes: scopes}
	return rv.handle
}

func (rv *reviewer) handle(ctx context.Context, job *storage.Job) (Effects, error) {
	cands, err := rv.db.Candidates(ctx, MaxReviewed)
	if err != nil {
		return nil, err
	}
	props := make([]proposal, len(cands))
	workers := max(2, rv.router.LiveCount())
	next := make(chan int)
	var stop atomic.Bool // set when no server is live: the rest wait
	var wg sync.WaitGroup
	var ferr error
	var fmu sync.Mutex
	for range workers {
		wg.Go(func() {
			for i := range next {
				props[i] = proposal{cand: cands[i]}
				if stop.Load() {
					props[i].missed = true
					continue
				}
				if err := rv.propose(ctx, &props[i]); err != nil {
					fmu.Lock()
					ferr = err
					fmu.Unlock()
					stop.Store(true)
				}
				if props[i].missed {
					stop.Store(true)
				}
			}
		})
	}
	for i := range cands {
		next <- i
	}
	close(next)
	wg.Wait()
	if ferr != nil {
		return nil, ferr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return func(ctx context.Context, tx *storage.JobTx) error {
		return applyReview(ctx, tx, props, workers)
	}, nil
}

// propose shows p's candidate with its nearest records to the model. A
// failed call is p's; the error is the store's own (a failed search).
func (rv *reviewer) propose(ctx context.Context, p *proposal) error {
	c := p.cand
	res, err := rv.pipeline.Run(ctx, retrieval.Query{
		Text: c.Title + "\n" + c.Content, Chain: rv.scopes.Chain(c.Namespace, c.Topics),
		Exclude: []string{c.ID}, Depth: Neighbours,
	})
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The candidate (type %s, source %s):\n%s\n", c.Type, c.Source, models.Fence("candidate", c.Title+"\n"+c.Content))
	for _, h := range res.Hits {
		if len(p.shown) == Neighbours {
			break
		}
		r := h.Record
		p.shown = append(p.shown, r.ID)
		fmt.Fprintf(&b, "\nStored record %s (type %s, status %s):\n%s\n", r.ID, r.Type, r.Status, models.Fence(r.ID, r.Title+"\n"+r.Content))
	}
	if len(p.shown) == 0 {
		b.WriteString("\nNo stored record is near it.\n")
	}
	user := b.String()
	reply, err := rv.router.Call(ctx, models.Request{
		Kind: models.Review, System: models.System(reviewTask), User: user, Schema: reviewSchema(),
		MaxTokens: reviewMaxTokens, ContextTokens: contextTokens(len(reviewTask)+len(user), reviewMaxTokens),
	}, &p.v)
	switch {
	case err == nil:
		p.model = reply.Model + " on " + reply.Server
	case ctx.Err() != nil:
		return ctx.Err()
	case noServerTried(err):
		p.missed = true
	default:
		p.err = err
	}
	return nil
}

// noServerTried reports whether a call failed before any server was tried:
// none was live, or the budget kept them all out (spent or paused).
func noServerTried(err error) bool {
	var ae *models.AttemptError
	return errors.Is(err, models.ErrBudget) || errors.Is(err, models.ErrUnavailable) && !errors.As(err, &ae)
}

// reviewCounts counts a run for its audit row.
type reviewCounts struct {
	duplicate, sessionState, keep, refused, failed, missed int
}

// applyReview applies the proposals in the completion transaction.
func applyReview(ctx context.Context, tx *storage.JobTx, props []proposal, workers int) error {
	var n reviewCounts
	for i := range props {
		if err := applyOne(ctx, tx, &props[i], &n); err != nil {
			return err
		}
	}
	detail := fmt.Sprintf("reviewed %d candidates on %d workers: %d forgotten as duplicates, %d as session state, %d kept, %d refused by a guard, %d failed calls",
		len(props)-n.missed, workers, n.duplicate, n.sessionState, n.keep, n.refused, n.failed)
	if n.missed > 0 {
		detail += fmt.Sprintf("; %d not reviewed (no live model server, or the model budget is spent)", n.missed)
	}
	return tx.Audit(ctx, storage.AuditEntry{Client: storage.SystemClient, Action: storage.ActionReview, Detail: screen.Redact(detail)})
}

// applyOne applies one proposal: the verdict when its guard holds.
func applyOne(ctx context.Context, tx *storage.JobTx, p *proposal, n *reviewCounts) error {
	c := p.cand
	audit := func(a storage.Action, detail string) error {
		return tx.Audit(ctx, storage.AuditEntry{Client: storage.SystemClient, Action: a, Namespace: c.Namespace,
			RecordID: c.ID, Detail: screen.Redact(detail)})
	}
	switch {
	case p.missed:
		n.missed++
		return nil
	case p.err != nil:
		n.failed++
		return audit(storage.ActionReviewFailed, "the call failed: "+p.err.Error())
	}
	said := p.v.Verdict
	if p.v.Verdict == VerdictDuplicate {
		said += " of " + clip(p.v.DuplicateOf, 64)
	}
	said += " (" + p.model + "): " + clip(strings.TrimSpace(p.v.Reason), maxReasonChars)
	refuse := func(why string) error {
		n.refused++
		return audit(storage.ActionReviewRefused, said+"; refused: "+why)
	}

	cur, err := tx.Record(ctx, c.ID)
	if err != nil {
		return err
	}
	if cur.Status != storage.StatusCandidate || cur.Revision != c.Revision {
		return refuse(fmt.Sprintf("the candidate changed since it was shown (now %s at revision %d)", cur.Status, cur.Revision))
	}
	var reason string
	switch p.v.Verdict {
	case VerdictKeep:
		n.keep++
		return audit(storage.ActionReviewVerdict, said+"; stays")
	case VerdictSessionState:
		if cur.Source != storage.SourceExtraction && storage.IsDurable(cur.Type) {
			return refuse(fmt.Sprintf("a durable %s from %s, not from session notes", cur.Type, cur.Source))
		}
		n.sessionState++
		reason = "nightly review: session state"
	case VerdictDuplicate:
		why, err := duplicateGuard(ctx, tx, p, cur)
		if err != nil {
			return err
		}
		if why != "" {
			return refuse(why)
		}
		n.duplicate++
		reason = "nightly review: a duplicate of " + p.v.DuplicateOf
	default: // the schema admits no other verdict
		return refuse("unknown verdict")
	}
	if _, err := tx.Forget(ctx, cur.ID, cur.Revision, screen.Redact(reason), storage.SystemClient); err != nil {
		return err
	}
	return audit(storage.ActionReviewVerdict, said+"; forgotten")
}

// duplicateGuard returns why the duplicate verdict of p may not be applied
// to cur, or "" when its guard holds.
func duplicateGuard(ctx context.Context, tx *storage.JobTx, p *proposal, cur *storage.Record) (string, error) {
	id := p.v.DuplicateOf
	switch {
	case id == cur.ID:
		return "it names the candidate itself", nil
	case !contains(p.shown, id):
		return "the named record was not shown with the candidate", nil
	}
	named, err := tx.Record(ctx, id)
	if storage.ErrorCode(err) == storage.NotFound {
		return "the named record no longer exists", nil
	} else if err != nil {
		return "", err
	}
	switch {
	case !named.Live():
		return "the named record is " + named.Status, nil
	case named.Type == storage.TypeSummary && cur.Type != storage.TypeSummary:
		return "the named record is a session summary and the candidate a " + cur.Type, nil
	}
	if m := missing(cur.Title+"\n"+cur.Content, named.Title+"\n"+named.Content); len(m) > 0 {
		return "the named record lacks " + clip(strings.Join(m, ", "), 300), nil
	}
	return "", nil
}
