package server

import (
	"context"
	"sync"

	"github.com/hearth-memory/hearth/server/auth"
	"github.com/hearth-memory/hearth/server/metrics"
	"github.com/hearth-memory/hearth/server/models"
	"github.com/hearth-memory/hearth/storage"
)

// ops is the server's operational state (issue #20): where tokens and
// backups live, the interceptor whose token table rotation updates, the
// coalesced refusals and the metrics.
type ops struct {
	tokensDir, backupDir string
	// in is set by NewGRPC.
	in *auth.Interceptor
	// rotate serialises token rotations, backup backups.
	rotate, backup sync.Mutex
	// refusals and scopeRefusals coalesce the refusals of calls without
	// a valid token and of calls out of a client's scope (refusals.go).
	refusals, scopeRefusals *refusals
	metrics                 *metrics.Metrics
	// streams bounds the open streaming calls (streams.go).
	streams streamLimit
}

func (s *Server) initOps(cfg Config) error {
	s.ops.tokensDir, s.ops.backupDir = cfg.TokensDir, cfg.BackupDir
	s.ops.refusals = newRefusals(s, unauthenticated)
	s.ops.scopeRefusals = newRefusals(s, outOfScope)
	statuses := []string{storage.StatusActive, storage.StatusCandidate, storage.StatusSuperseded, storage.StatusDeleted}
	s.ops.metrics = metrics.New(metrics.Config{
		Tools: cfg.Tools, Types: storage.Types, Statuses: statuses, States: storage.JobStates,
		Tiers:    []string{string(models.Primary), string(models.Fallback), string(models.Direct)},
		Outcomes: storage.ReceiptOutcomes,
		Gauges:   s.gauges, Now: s.db.Now,
	})
	return nil
}

// gauges reads what the metrics report from the store.
func (s *Server) gauges(ctx context.Context) (metrics.Gauges, error) {
	var g metrics.Gauges
	st, err := s.db.Status(ctx)
	if err != nil {
		return g, err
	}
	for _, c := range st.Counts {
		g.Records = append(g.Records, metrics.Count{Labels: [2]string{c.Type, c.Status}, N: c.N})
	}
	jobs, err := s.db.JobCounts(ctx)
	if err != nil {
		return g, err
	}
	for _, c := range jobs {
		g.Jobs = append(g.Jobs, metrics.Count{Labels: [2]string{c.Kind, c.State}, N: c.N})
	}
	if at, ok, err := s.db.LastBackup(ctx); err != nil {
		return g, err
	} else if ok {
		g.LastBackup = at
	}
	if g.Extractions, err = s.db.ExtractionReceiptCounts(ctx); err != nil {
		return g, err
	}
	if s.models != nil && s.models.Configured() {
		for _, ms := range s.models.Status().Servers {
			g.ModelServers = append(g.ModelServers, metrics.ModelServer{Tier: string(ms.Tier), Live: ms.Live,
				CallsToday: ms.Today.Calls, TokensToday: ms.Today.Tokens(), Spent: ms.Spent, Calls: ms.Total.Calls, Tokens: ms.Total.Tokens()})
		}
		paused := s.models.Budget().Paused
		g.ModelsPaused = &paused
	}
	if s.encoder != nil {
		if err := s.vectors.Sync(ctx); err != nil {
			return g, err
		}
		c, ok := s.vectors.Counts()
		g.Encoder = &metrics.Encoder{Live: s.encoder.Status().Live, Counted: ok, Current: c.Current, Stale: c.Stale, Missing: c.Missing}
	}
	commits, writes := s.db.GroupStats()
	ck := s.db.CheckpointStats()
	g.Writer = &metrics.Writer{Waiting: s.db.WritesWaiting(), Commits: commits, Writes: writes, WALBytes: ck.WALBytes,
		Truncate: ck.Count, TruncateUnfinished: ck.Unfinished, Background: ck.Passive, BackgroundFailed: ck.PassiveFailed,
		CatchUp: ck.CaughtUp, CatchUpFailed: ck.CatchUpFailed, Restarts: ck.Restarts}
	return g, nil
}

// ObserveCall counts a finished call in the metrics. The daemon calls it
// from the interceptor's OnDone, beside the access log.
func (s *Server) ObserveCall(d auth.Done) {
	s.ops.metrics.Observe(d.Method, d.Code, d.Duration)
}

// Close writes what the server still holds in memory: the counts of
// refusals not yet audited. Call it once no call can arrive any more,
// before the store closes.
func (s *Server) Close(ctx context.Context) error {
	s.ops.refusals.close(ctx)
	s.ops.scopeRefusals.close(ctx)
	return nil
}
