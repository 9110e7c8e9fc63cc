package server

import (
	"context"
	"slices"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/models"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/screen"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// modelStatus adds the model part of memory_status to resp: each server as
// the router sees it with what it spent today, the budget, the job queue by
// kind and state, and how many queued model jobs wait because no server is
// configured or live, or the budget is spent or paused.
func (s *Server) modelStatus(ctx context.Context, resp *hearthv1.StatusResponse) error {
	jobs, err := s.db.JobCounts(ctx)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		resp.Jobs = append(resp.Jobs, &hearthv1.JobCount{Kind: j.Kind, State: j.State, Count: uint32(j.N)})
	}
	waiting := true
	if s.models != nil && s.models.Configured() {
		resp.ModelsConfigured = true
		waiting = !s.models.Available()
		b := s.models.Budget()
		resp.ModelBudget = &hearthv1.ModelBudget{
			DailyCalls: uint64(b.Cap.Calls), DailyTokens: uint64(b.Cap.Tokens), Day: b.Day,
			ResetsAt: timestamppb.New(b.ResetsAt), Paused: b.Paused, Waiting: b.Waiting,
		}
		for _, k := range []models.Kind{models.Extraction, models.Review, models.Answer} {
			resp.ModelChains = append(resp.ModelChains, &hearthv1.ModelChain{Kind: string(k), Models: s.models.Chain(k)})
		}
		for _, ms := range s.models.Status().Servers {
			m := &hearthv1.ModelServer{
				Url: ms.URL, Format: ms.Format, Tier: string(ms.Tier), Live: ms.Live, Probed: ms.Probed,
				// A server's error message may quote anything.
				ProbeError: screen.Redact(ms.ProbeError).String(), Models: ms.Models,
				CallsInFlight: uint32(ms.InFlight), Calls: uint32(ms.Calls),
				CallsToday: uint64(ms.Today.Calls), PromptTokensToday: uint64(ms.Today.PromptTokens),
				ReplyTokensToday: uint64(ms.Today.CompletionTokens), EstimatedCallsToday: uint64(ms.Today.Estimated),
				BudgetSpent: ms.Spent,
			}
			if !ms.LastProbe.IsZero() {
				m.LastProbe = timestamppb.New(ms.LastProbe)
			}
			for _, f := range ms.Failures {
				m.Failures = append(m.Failures, &hearthv1.ModelFailures{Model: f.Model, Count: uint32(f.Count)})
			}
			resp.ModelServers = append(resp.ModelServers, m)
		}
	}
	if waiting {
		for _, j := range jobs {
			if j.State == storage.JobQueued && slices.Contains(storage.ModelKinds, j.Kind) {
				resp.JobsWaitingForModel += uint32(j.N)
			}
		}
	}
	return nil
}
