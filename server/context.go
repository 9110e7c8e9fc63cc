package server

import (
	"context"
	"strings"
	"unicode/utf8"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/budget"
	"github.com/hearth-memory/hearth/server/retrieval"
)

const (
	// contextPool is how many of the best matches are offered to the
	// packet; those that do not fit are counted in left_out.
	contextPool = 50
	// Defaults of context_budget_tokens and hard_context_limit_tokens, for a
	// server built without options.
	defaultContextBudget = 4000
	defaultContextLimit  = 8000
)

func checkContextRequest(r *hearthv1.ContextRequest) error {
	task := r.GetTask()
	switch {
	case strings.TrimSpace(task) == "":
		return invalid("task", "is required: what you are about to do, in a sentence or two")
	case !utf8.ValidString(task):
		return invalid("task", "is not valid UTF-8")
	}
	if err := checkLen("task", task, maxTaskChars); err != nil {
		return err
	}
	if r.BudgetTokens != nil && int(r.GetBudgetTokens()) < minContextBudget {
		return invalid("budget_tokens", "must be at least %d", minContextBudget)
	}
	return nil
}

// contextBudget returns the packet budget for a request that asked for
// asked tokens (nil: the default), and whether the ask was lowered to
// hard_context_limit_tokens (docs/design.md R-B4).
func (s *Server) contextBudget(asked *uint32) (tokens int, clamped bool) {
	def, limit := s.opts.ContextBudgetTokens, s.opts.HardContextLimitTokens
	if limit <= 0 {
		limit = defaultContextLimit
	}
	if def <= 0 {
		def = defaultContextBudget
	}
	def = min(def, limit)
	if asked == nil {
		return def, false
	}
	if int64(*asked) > int64(limit) {
		return limit, true
	}
	return int(*asked), false
}

// Context returns the context packet for a task (docs/design.md R-B4, R-B7): the
// records of the scope chain (and a hub's reach) that best match the task,
// ranked as search ranks them, whole, most relevant first, within the
// budget. A record that does not fit is passed over (a later, smaller one
// may fit) and counted in left_out. The task is read by full-text search
// like a query and never stored. Records in the packet count as returned
// (R-K5).
func (m *memoryService) Context(ctx context.Context, r *hearthv1.ContextRequest) (*hearthv1.ContextResponse, error) {
	if err := checkContextRequest(r); err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	res, _, err := m.retrieve(ctx, retrieval.Query{Text: r.GetTask(), Depth: contextPool},
		r.GetNamespace(), r.GetRemote(), r.GetTopics())
	if err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	tokens, clamped := m.contextBudget(r.BudgetTokens)
	recs := make([]*hearthv1.Record, len(res.Hits))
	for i, h := range res.Hits {
		recs[i] = recordToProto(h.Record)
	}
	resp := &hearthv1.ContextResponse{BudgetTokens: uint32(tokens), Clamped: clamped}
	p, err := budget.Pack(m.size, resp, resp.SetRecords, recs, budget.Options{MaxBytes: tokens * budget.BytesPerToken, Skip: true})
	if err != nil {
		return nil, toStatus(ctx, m.log, err)
	}
	returned := make([]string, len(p.Kept))
	for i, k := range p.Kept {
		returned[i] = recs[k].GetId()
	}
	m.pipeline.Returned(returned)
	return resp, nil
}
