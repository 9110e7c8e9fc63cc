package server

import (
	"context"
	"net/url"
	"slices"
	"strings"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/auth"
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
	counts, err := s.db.ExtractionReceiptCounts(ctx)
	if err != nil {
		return err
	}
	resp.Extractions = &hearthv1.ExtractionCounts{Kept: uint32(counts[storage.ReceiptKept]),
		Unparsable: uint32(counts[storage.ReceiptUnparsable]), Failed: uint32(counts[storage.ReceiptFailed])}
	if waiting {
		for _, j := range jobs {
			if j.State == storage.JobQueued && slices.Contains(storage.ModelKinds, j.Kind) {
				resp.JobsWaitingForModel += uint32(j.N)
			}
		}
	}
	return nil
}

// urlWithheld stands for a model server's or the encoder's address in an
// error message shown to a caller without admin scope.
const urlWithheld = "(address withheld)"

// withholdURLs empties the model servers' and the encoder's URLs in a
// memory_status reply for a caller without admin scope, and takes them
// (and their host:port) out of the probe errors, which quote them. The
// reply keeps its shape: every field is still there.
func withholdURLs(ctx context.Context, resp *hearthv1.StatusResponse) {
	if c, ok := auth.FromContext(ctx); ok && c.Has(auth.Admin) {
		return
	}
	for _, m := range resp.GetModelServers() {
		m.ProbeError = withoutURL(m.GetProbeError(), m.GetUrl())
		m.Url = ""
	}
	if e := resp.GetEncoder(); e != nil {
		e.Error = withoutURL(e.GetError(), e.GetUrl())
		e.Url = ""
	}
}

// withoutURL replaces raw, and its host (with and without the port), in
// msg.
func withoutURL(msg, raw string) string {
	if msg == "" || raw == "" {
		return msg
	}
	olds := []string{raw, strings.TrimSuffix(raw, "/")}
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		olds = append(olds, u.Host)
		if h := u.Hostname(); h != "" {
			olds = append(olds, h)
		}
	}
	for _, o := range olds {
		if o != "" {
			msg = strings.ReplaceAll(msg, o, urlWithheld)
		}
	}
	return msg
}
