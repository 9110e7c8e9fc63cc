package harness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Ranking mode names: full text alone, cosine alone, their fusion, and
// full text with a rerank server judging the prompt hook's searches.
const (
	ModeFTS    = "fts"
	ModeCosine = "cosine"
	ModeRRF    = "rrf"
	ModeRerank = "rerank"
)

// rerankSuffix ends the ranking of a reply the rerank server ordered.
const rerankSuffix = "+rerank"

// Mode says how to ask the server for one ranking mode.
type Mode struct {
	Name string
	// Encoder: the daemon must run with embed_url set.
	Encoder bool
	// Rerank: the daemon must run with rerank_url set. Only a search that
	// abstains is reranked, so such a mode is measured in the hook table
	// alone (HookOnly).
	Rerank   bool
	HookOnly bool
	// Args are memory_search arguments, besides query, namespace, limit
	// and recall, that ask for this mode.
	Args map[string]any
	// Want is the ranking the search response must report.
	Want string
	// Unavailable, when not empty, says why the harness cannot ask for
	// this mode yet; the mode's row then says so instead of figures.
	Unavailable string
}

// Modes are the modes the harness knows, in report order. A plain search
// of a daemon without an encoder is full text; of a daemon with an
// encoder whose vectors are current, fusion (docs/design.md R-K3). Cosine alone is
// asked for with memory_search's ranking argument, which the server
// refuses (FAILED_PRECONDITION) rather than answer by full text when the
// encoder cannot answer.
var Modes = []Mode{
	{Name: ModeFTS, Want: ModeFTS},
	{Name: ModeCosine, Encoder: true, Want: ModeCosine, Args: map[string]any{"ranking": "cosine"}},
	{Name: ModeRRF, Encoder: true, Want: ModeRRF},
	{Name: ModeRerank, Rerank: true, HookOnly: true, Want: ModeFTS},
}

// ModeNamed returns the mode called name.
func ModeNamed(name string) (Mode, bool) {
	for _, m := range Modes {
		if m.Name == name {
			return m, true
		}
	}
	return Mode{}, false
}

// DefaultLimit is the search limit the harness asks for: recall@10 needs 10.
const DefaultLimit = 10

// Config is one harness run.
type Config struct {
	// Hearth is the hearth binary to run (`hearth serve`).
	Hearth string
	Set    *Set
	// Modes to measure, by name; every mode in Modes when empty.
	Modes []string
	// EmbedURL is the encoder the modes that need one get as embed_url;
	// without it they are reported as not run.
	EmbedURL string
	// EncoderRequests, when set, reports how many embeddings requests the
	// encoder at EmbedURL has had (the in-process test encoder does): a
	// server that makes none after loading does not use embed_url, and the
	// harness says so without waiting out EmbedWait.
	EncoderRequests func() int
	// EmbedWait bounds the wait for the server to rank with the encoder
	// after loading (vectors are made in the background); 3 minutes when 0.
	EmbedWait time.Duration
	// WorkDir holds the daemons' data directories and logs.
	WorkDir string
	// RerankURL is the rerank server (POST {RerankURL}/rerank) the modes
	// that need one get as rerank_url, with RerankModel as rerank_model;
	// without it they are reported as not run.
	RerankURL, RerankModel string
	// Progress, when set, gets one line per step.
	Progress io.Writer
	// Bars are min_coverage values to show in the hook table besides off
	// and the server's own: for each, a daemon started with that
	// min_coverage answers the hook's searches (docs/abstention.md).
	Bars []float64
	// Database, when set, gives each daemon a new, empty PostgreSQL
	// database to store in (`hearth serve --database`): its URL and a
	// function that drops it once the daemon has stopped. Without it each
	// daemon stores in SQLite in its data directory.
	Database func(ctx context.Context) (url string, drop func() error, err error)
}

// Report is a run's outcome, as printed and as written to results.json.
type Report struct {
	// Format is the results file format's version.
	Format int       `json:"format"`
	Date   time.Time `json:"date"`
	// Hearth is the server version /health reported.
	Hearth string `json:"hearth"`
	// Backend is the database the daemons stored in: sqlite or postgres.
	Backend string  `json:"backend,omitempty"`
	Set     SetInfo `json:"set"`
	Limit   int     `json:"limit"`
	// Modes in report order.
	Modes []ModeReport `json:"modes"`
}

// ReportFormat is the current results file format.
const ReportFormat = 1

// SetInfo describes the set a report measured.
type SetInfo struct {
	Records int            `json:"records"`
	Queries int            `json:"queries"`
	Kinds   map[string]int `json:"kinds"`
	Digest  string         `json:"digest"`
}

// ModeReport is one mode's figures, or why it has none.
type ModeReport struct {
	Mode string `json:"mode"`
	// Ran is false when the mode could not be measured; Reason says why.
	Ran    bool   `json:"ran"`
	Reason string `json:"reason,omitempty"`
	// Fallbacks counts queries the server answered with another ranking
	// than the mode's (an encoder too slow for one query, say).
	Fallbacks int `json:"fallbacks"`
	// Truncated counts searches whose hits the search budget cut.
	Truncated int           `json:"truncated"`
	Rows      []Row         `json:"rows,omitempty"`
	Results   []QueryResult `json:"results,omitempty"`
	// Hook is the prompt hook's view (HookRows, then a row per bar), over
	// every query, the unanswerable ones (KindNone) included; HookOff and
	// HookServer are its results without and with the server's relevance
	// bar.
	Hook       []HookRow    `json:"hook,omitempty"`
	HookOff    []HookResult `json:"hook_off,omitempty"`
	HookServer []HookResult `json:"hook_server,omitempty"`
	// HookReranked counts HookServer's searches the rerank server ordered
	// (ranking ending "+rerank"); the others fell back to the order and
	// the bar without rerank.
	HookReranked int `json:"hook_reranked"`
}

// Row returns the mode's row for kind, if it has one.
func (m ModeReport) Row(kind string) (Row, bool) {
	for _, r := range m.Rows {
		if r.Kind == kind {
			return r, true
		}
	}
	return Row{}, false
}

// Mode returns the report of the mode called name, if it is there.
func (r *Report) Mode(name string) (ModeReport, bool) {
	for _, m := range r.Modes {
		if m.Mode == name {
			return m, true
		}
	}
	return ModeReport{}, false
}

// Run measures the set under each mode in cfg: for the modes that need no
// encoder and for those that need one, it starts a fresh daemon, stores
// every record through REST memory_store in file order, checks through
// memory_namespace that each query's answers are in its scope chain, and
// runs every query through REST memory_search. It fails on a set the
// server refuses (a record it will not store, an answer out of scope);
// a mode it cannot measure gets a reason instead of figures.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Hearth == "" {
		return nil, errors.New("no hearth binary")
	}
	if cfg.Set == nil {
		return nil, errors.New("no set")
	}
	var modes []Mode
	for _, name := range cfg.Modes {
		m, ok := ModeNamed(name)
		if !ok {
			return nil, fmt.Errorf("mode %q: want one of %s", name, strings.Join(modeNames(), ", "))
		}
		if !slices.ContainsFunc(modes, func(x Mode) bool { return x.Name == name }) {
			modes = append(modes, m)
		}
	}
	if len(modes) == 0 {
		modes = Modes
	}
	// Report order is Modes order, whatever order they were asked in.
	slices.SortFunc(modes, func(a, b Mode) int { return modeIndex(a.Name) - modeIndex(b.Name) })

	rep := &Report{
		Format: ReportFormat, Date: time.Now().UTC().Truncate(time.Second), Limit: DefaultLimit, Backend: "sqlite",
		Set: SetInfo{Records: len(cfg.Set.Records), Queries: len(cfg.Set.Queries), Kinds: cfg.Set.Count(), Digest: cfg.Set.Digest()},
	}
	if cfg.Database != nil {
		rep.Backend = "postgres"
	}
	reports := make(map[string]*ModeReport, len(modes))
	var plain, encoded, reranked []Mode
	for _, m := range modes {
		mr := &ModeReport{Mode: m.Name}
		reports[m.Name] = mr
		switch {
		case m.Unavailable != "":
			mr.Reason = m.Unavailable
		case m.Encoder && cfg.EmbedURL == "":
			mr.Reason = "no encoder given (-embed-url or -wink)"
		case m.Rerank && cfg.RerankURL == "":
			mr.Reason = "no rerank server given"
		case m.Encoder:
			encoded = append(encoded, m)
		case m.Rerank:
			reranked = append(reranked, m)
		default:
			plain = append(plain, m)
		}
	}
	for _, group := range []struct {
		modes []Mode
		name  string
		opts  []string
	}{
		{plain, "fts", nil},
		{encoded, "encoder", []string{"embed_url=" + cfg.EmbedURL}},
		// The eval measures what the rerank server's order and scores do,
		// not how fast it answers: a generous timeout.
		{reranked, "rerank", []string{"rerank_url=" + cfg.RerankURL, "rerank_model=" + cfg.RerankModel, "rerank_timeout_s=5"}},
	} {
		if len(group.modes) == 0 {
			continue
		}
		version, err := runGroup(ctx, cfg, group.modes, group.name, group.opts, reports)
		if err != nil {
			return nil, err
		}
		rep.Hearth = version
	}
	var base map[string]QueryResult
	if fts := reports[ModeFTS]; fts != nil && fts.Ran {
		base = make(map[string]QueryResult, len(fts.Results))
		for _, r := range fts.Results {
			base[r.ID] = r
		}
	}
	for _, m := range modes {
		mr := reports[m.Name]
		if mr.Ran && !m.HookOnly {
			b := base
			if m.Name == ModeFTS {
				b = nil
			}
			mr.Rows = Rows(mr.Results, b)
		}
		rep.Modes = append(rep.Modes, *mr)
	}
	return rep, nil
}

func modeNames() []string {
	var out []string
	for _, m := range Modes {
		out = append(out, m.Name)
	}
	return out
}

func modeIndex(name string) int {
	return slices.IndexFunc(Modes, func(m Mode) bool { return m.Name == name })
}

// runGroup runs the modes that share one daemon, started with the
// --option overrides opts (name names its log), and fills their reports;
// then, for each of cfg.Bars, the hook's searches on a daemon whose
// min_coverage is that bar. It returns the server's version.
func runGroup(ctx context.Context, cfg Config, modes []Mode, name string, opts []string, reports map[string]*ModeReport) (string, error) {
	d, ids, version, err := loaded(ctx, cfg, name, opts)
	if err != nil {
		return "", err
	}
	defer d.stop()
	c := d.client
	keys := make(map[string]string, len(ids))
	for k, id := range ids {
		keys[id] = k
	}
	encoder := slices.ContainsFunc(modes, func(m Mode) bool { return m.Encoder })
	for _, m := range modes {
		mr := reports[m.Name]
		if reason, err := ready(ctx, cfg, c, encoder); err != nil {
			return "", err
		} else if reason != "" {
			mr.Reason = reason
			continue
		}
		if !m.HookOnly {
			progress(cfg, "running %d queries (%s)", len(cfg.Set.Queries), m.Name)
			for _, q := range cfg.Set.Queries {
				if q.Kind == KindNone {
					continue // no answer to rank: the hook view measures these
				}
				res, err := c.search(ctx, q, m, ids, keys)
				if err != nil && len(m.Args) > 0 && strings.Contains(err.Error(), "FAILED_PRECONDITION") {
					// The mode asked for by name could not be given for this
					// query (the encoder too slow for it, say): no hits.
					res, err = QueryResult{ID: q.ID, Kind: q.Kind, Ranking: "unavailable", Ranks: make([]int, len(q.Answers))}, nil
				}
				if err != nil {
					return "", err
				}
				if res.Ranking != m.Want {
					mr.Fallbacks++
				}
				if res.LeftOut > 0 {
					mr.Truncated++
				}
				mr.Results = append(mr.Results, res)
			}
		}
		progress(cfg, "running %d queries as the prompt hook (%s)", len(cfg.Set.Queries), m.Name)
		if mr.HookOff, err = hookRun(ctx, cfg, c, m, false, ids); err != nil {
			return "", err
		}
		if mr.HookServer, err = hookRun(ctx, cfg, c, m, true, ids); err != nil {
			return "", err
		}
		for _, r := range mr.HookServer {
			if strings.HasSuffix(r.Ranking, rerankSuffix) {
				mr.HookReranked++
			}
		}
		mr.Hook = HookRows(mr.HookOff, mr.HookServer)
		mr.Ran = true
	}
	for _, bar := range cfg.Bars {
		if err := runBar(ctx, cfg, modes, name, opts, bar, reports); err != nil {
			return "", err
		}
	}
	return version, nil
}

// loaded starts a daemon with the --option overrides opts and stores the
// set in it, checking every query's answers are in its scope chain. It
// returns the daemon, the ids the server gave the set's keys, and its
// version.
func loaded(ctx context.Context, cfg Config, name string, opts []string) (*daemon, map[string]string, string, error) {
	progress(cfg, "starting hearth (%s)", name)
	var args []string
	var drop func() error
	if cfg.Database != nil {
		url, dropDB, err := cfg.Database(ctx)
		if err != nil {
			return nil, nil, "", fmt.Errorf("a database for %s: %w", name, err)
		}
		args, drop = []string{"--database", url}, dropDB
	}
	d, err := startDaemon(ctx, cfg.Hearth, cfg.WorkDir, name, cfg.Set.Options, opts, args...)
	if err != nil {
		if drop != nil {
			err = errors.Join(err, drop())
		}
		return nil, nil, "", err
	}
	d.drop = drop
	fail := func(err error) (*daemon, map[string]string, string, error) {
		d.stop()
		return nil, nil, "", err
	}
	version, err := d.client.version(ctx)
	if err != nil {
		return fail(err)
	}
	progress(cfg, "hearth %s on %s: storing %d records", version, d.addr, len(cfg.Set.Records))
	ids, err := d.client.load(ctx, cfg.Set.Records)
	if err != nil {
		return fail(err)
	}
	if err := d.client.checkScopes(ctx, cfg.Set); err != nil {
		return fail(err)
	}
	return d, ids, version, nil
}

// ready waits, on a daemon with an encoder, for a plain search to fuse:
// the encoder is live and every vector current, so every encoder mode can
// be asked for. It returns a reason when the wait ends without it.
func ready(ctx context.Context, cfg Config, c *client, encoder bool) (string, error) {
	if !encoder {
		return "", nil
	}
	progress(cfg, "waiting for the server to rank %s", ModeRRF)
	return waitRanking(ctx, cfg, c, Mode{Name: ModeRRF, Want: ModeRRF})
}

// hookRun runs every query of the set as the prompt hook does under m,
// with or without abstain.
func hookRun(ctx context.Context, cfg Config, c *client, m Mode, abstain bool, ids map[string]string) ([]HookResult, error) {
	var out []HookResult
	for _, q := range cfg.Set.Queries {
		res, err := c.hookSearch(ctx, q, m, abstain, ids)
		if err != nil && len(m.Args) > 0 && strings.Contains(err.Error(), "FAILED_PRECONDITION") {
			res, err = HookResult{ID: q.ID, Kind: q.Kind, Ranks: make([]int, len(q.Answers))}, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	return out, nil
}

// runBar adds to each of modes' hook rows the row of a daemon started as
// the group's with min_coverage at bar: the server's own decision at that
// bar, to choose min_coverage.
func runBar(ctx context.Context, cfg Config, modes []Mode, name string, opts []string, bar float64, reports map[string]*ModeReport) error {
	b := strconv.FormatFloat(bar, 'f', -1, 64)
	d, ids, _, err := loaded(ctx, cfg, name+"-bar-"+b, append(slices.Clone(opts), "min_coverage="+b))
	if err != nil {
		return err
	}
	defer d.stop()
	encoder := slices.ContainsFunc(modes, func(m Mode) bool { return m.Encoder })
	for _, m := range modes {
		mr := reports[m.Name]
		if !mr.Ran {
			continue
		}
		if reason, err := ready(ctx, cfg, d.client, encoder); err != nil || reason != "" {
			return cmp.Or(err, fmt.Errorf("bar %s: %s", b, reason))
		}
		progress(cfg, "running %d queries as the prompt hook (%s, min_coverage %s)", len(cfg.Set.Queries), m.Name, b)
		res, err := hookRun(ctx, cfg, d.client, m, true, ids)
		if err != nil {
			return err
		}
		mr.Hook = append(mr.Hook, hookRow(strconv.FormatFloat(bar, 'f', 2, 64), res))
	}
	return nil
}

// waitRanking polls a search until the server reports m.Want. It returns a
// reason when the wait ends without it.
func waitRanking(ctx context.Context, cfg Config, c *client, m Mode) (string, error) {
	wait := cfg.EmbedWait
	if wait <= 0 {
		wait = 3 * time.Minute
	}
	// A server that uses the encoder calls it within moments of a store.
	const noCallGrace = 15 * time.Second
	start := time.Now()
	q := cfg.Set.Queries[0]
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	last := ""
	for {
		ranking, err := c.ranking(ctx, q, m)
		if err != nil {
			return "", err
		}
		if ranking == m.Want {
			return "", nil
		}
		last = ranking
		elapsed := time.Since(start)
		if cfg.EncoderRequests != nil && cfg.EncoderRequests() == 0 && elapsed > min(noCallGrace, wait) {
			return fmt.Sprintf("the server made no request to the encoder in %v after loading: it does not use embed_url (yet), or cannot reach %s", noCallGrace, cfg.EmbedURL), nil
		}
		if elapsed > wait {
			return fmt.Sprintf("the server still answered ranking %q after %v (encoder not live, or vectors not current)", last, wait), nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-tick.C:
		}
	}
}

func progress(cfg Config, format string, args ...any) {
	if cfg.Progress != nil {
		fmt.Fprintf(cfg.Progress, "eval: "+format+"\n", args...)
	}
}
