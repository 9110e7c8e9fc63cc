// Package metrics keeps the server's Prometheus metrics: calls by tool and
// outcome code and their latency, counted as the interceptor reports each
// call, and gauges read at every scrape (records by type and status, jobs by
// kind and state, the last backup, model servers and the encoder up or
// down, record vectors by state, the single writer's queue, commits and
// WAL).
//
// Every label value comes from a closed set fixed by the code: tool names
// from the descriptors (a method outside them counts as "other"), gRPC code
// names, record types and statuses, job kinds (named by the server's code,
// never by a caller) and states, model server tiers and their positions in
// the configuration (never their URLs). No namespace, query, title or client name
// is ever a label value, so neither a caller nor the store's content can
// grow the series or write text into them.
package metrics

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"
	rpccode "google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/grpc/codes"
)

// Other stands for any value outside a label's closed set.
const Other = "other"

// Gauges is what the store reports at a scrape.
type Gauges struct {
	Records []Count // by type and status
	Jobs    []Count // by kind and state
	// LastBackup is when the newest backup was taken; zero when none.
	LastBackup time.Time
	// ModelServers are the configured model servers, in configuration
	// order; none without a model server. ModelsPaused is whether an admin
	// paused model calls; nil without a model server.
	ModelServers []ModelServer
	ModelsPaused *bool
	// Extractions counts the extraction receipts kept, by outcome.
	Extractions map[string]int
	// Encoder is the encoder; nil without embed_url.
	Encoder *Encoder
	// Writer is the store's single writer; nil leaves its series out.
	Writer *Writer
}

// Writer is the store's single writer: the writes queued for it, what it
// has committed since the store opened, and its WAL and checkpoints.
type Writer struct {
	Waiting int64 // writes queued for the writer
	// Commits are the transactions committed; Writes the writes they held.
	Commits, Writes int64
	WALBytes        int64 // the WAL's frames when the writer last looked
	// The checkpoints run, by kind, and how many of them did not finish
	// (a TRUNCATE checkpoint that readers held off) or failed.
	Truncate, TruncateUnfinished int
	Background, BackgroundFailed int
	CatchUp, CatchUpFailed       int
	// Restarts are the commits that found the WAL started over.
	Restarts int64
}

// ModelServer is one model server as the router sees it.
type ModelServer struct {
	Tier string // primary, fallback or direct
	Live bool   // calls go to it
	// CallsToday and TokensToday are what it spent on the budget day;
	// Spent whether that reached its daily cap. Calls and Tokens count
	// since the start.
	CallsToday, TokensToday, Calls, Tokens int64
	Spent                                  bool
}

// Encoder is the encoder and the state of the record vectors.
type Encoder struct {
	Live bool // it answered its last probe
	// Counted says the vector index could tell the vectors' states: it
	// has loaded, for the model and snapshot the encoder named. Without
	// it the three counts are unknown and left out of the scrape.
	Counted                 bool
	Current, Stale, Missing int // live records by the state of their vector
}

// Count is one gauge value: Labels in the order of its metric's labels.
type Count struct {
	Labels [2]string
	N      int
}

// Config fixes the closed label sets and where gauges come from.
type Config struct {
	// Tools maps full gRPC method names to tool names.
	Tools map[string]string
	// Types and Statuses are the record types and statuses; States the
	// job states; Tiers the model server tiers; Outcomes the extraction
	// receipt outcomes.
	Types, Statuses, States, Tiers, Outcomes []string
	// Gauges reads the store; it is called once per scrape.
	Gauges func(ctx context.Context) (Gauges, error)
	// Now is the clock for the backup's age (nil: time.Now).
	Now func() time.Time
}

// Metrics holds the registry. It is safe for concurrent use.
type Metrics struct {
	cfg     Config
	reg     *prometheus.Registry
	calls   *prometheus.CounterVec
	latency *prometheus.HistogramVec
	// storeErrors counts scrapes whose store gauges could not be read.
	storeErrors atomic.Int64
}

// kindPattern is the form of a job kind (storage refuses any other).
var kindPattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// LatencyBuckets are the call duration buckets, in seconds.
var LatencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// New returns metrics with the Go runtime and process collectors and the
// store's gauges registered.
func New(cfg Config) *Metrics {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	m := &Metrics{cfg: cfg, reg: prometheus.NewRegistry()}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hearth_calls_total",
		Help: "Calls by tool and outcome (gRPC code name), whichever transport carried them.",
	}, []string{"tool", "code"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "hearth_call_duration_seconds",
		Help:    "Call latency by tool, from the interceptor's start to the handler's return.",
		Buckets: LatencyBuckets,
	}, []string{"tool"})
	m.reg.MustRegister(m.calls, m.latency, storeCollector{m},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Observe counts one finished call of method.
func (m *Metrics) Observe(method string, code codes.Code, d time.Duration) {
	tool, ok := m.cfg.Tools[method]
	if !ok {
		tool = Other
	}
	m.calls.WithLabelValues(tool, CodeName(code)).Inc()
	m.latency.WithLabelValues(tool).Observe(d.Seconds())
}

// Text renders every metric in the Prometheus text exposition format
// (version 0.0.4).
func (m *Metrics) Text() (string, error) {
	mfs, err := m.reg.Gather()
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return "", err
		}
	}
	return buf.String(), nil
}

var (
	recordsDesc      = prometheus.NewDesc("hearth_records", "Records by type and status.", []string{"type", "status"}, nil)
	jobsDesc         = prometheus.NewDesc("hearth_jobs", "Jobs in the durable queue by kind and state.", []string{"kind", "state"}, nil)
	backupTS         = prometheus.NewDesc("hearth_last_backup_timestamp_seconds", "When the newest backup (memory_backup) was taken, Unix time; absent before the first.", nil, nil)
	backupAge        = prometheus.NewDesc("hearth_last_backup_age_seconds", "Seconds since the newest backup was taken; absent before the first.", nil, nil)
	modelUp          = prometheus.NewDesc("hearth_model_server_up", "1 while calls go to a model server (it answered its last probe, or was not probed yet), else 0; by tier and position in the configuration (0 first). Absent without a model server.", []string{"tier", "position"}, nil)
	modelCallsToday  = prometheus.NewDesc("hearth_model_calls_today", "Calls sent to a model server on the budget day (local date), by tier and position; model_daily_calls caps it. Absent without a model server.", []string{"tier", "position"}, nil)
	modelTokensToday = prometheus.NewDesc("hearth_model_tokens_today", "Prompt and reply tokens of a model server's calls on the budget day (as it reported them, or estimated), by tier and position; model_daily_tokens caps it. Absent without a model server.", []string{"tier", "position"}, nil)
	modelSpent       = prometheus.NewDesc("hearth_model_budget_spent", "1 while a model server has spent its daily budget (no call goes to it until the next day or memory_model_resume), else 0; by tier and position. Absent without a model server.", []string{"tier", "position"}, nil)
	modelCalls       = prometheus.NewDesc("hearth_model_calls_total", "Calls sent to a model server since start, by tier and position. Absent without a model server.", []string{"tier", "position"}, nil)
	modelTokens      = prometheus.NewDesc("hearth_model_tokens_total", "Prompt and reply tokens of a model server's calls since start, by tier and position. Absent without a model server.", []string{"tier", "position"}, nil)
	extractionsDesc  = prometheus.NewDesc("hearth_extraction_receipts", "Extraction receipts kept (retention_deleted_days) by outcome: kept (the reply was read), unparsable (no reply fit the schema: a counted failure, its reply kept) or failed (no reply).", []string{"outcome"}, nil)
	modelPaused      = prometheus.NewDesc("hearth_model_calls_paused", "1 while an admin has paused model calls (memory_model_pause), else 0. Absent without a model server.", nil, nil)
	encoderUp        = prometheus.NewDesc("hearth_encoder_up", "1 while the encoder (embed_url) answers its probes, else 0; absent without embed_url.", nil, nil)
	vectorsDesc      = prometheus.NewDesc("hearth_record_vectors", "Live records by the state of their vector (current, stale, missing); absent without embed_url, and until the vector index has loaded for the model and snapshot the encoder names.", []string{"state"}, nil)
	storeErrs        = prometheus.NewDesc("hearth_store_scrape_errors_total", "Scrapes whose store gauges could not be read (they are left out of that scrape).", nil, nil)
	waitingDesc      = prometheus.NewDesc("hearth_writes_waiting", "Writes queued for the store's single writer.", nil, nil)
	commitsDesc      = prometheus.NewDesc("hearth_write_commits_total", "Transactions the single writer has committed since start; a group commit holds several callers' writes.", nil, nil)
	writesDesc       = prometheus.NewDesc("hearth_writes_committed_total", "Writes the single writer ran in the transactions it committed since start (one undone by its own error included); over hearth_write_commits_total, the writes per commit.", nil, nil)
	walDesc          = prometheus.NewDesc("hearth_wal_bytes", "Size of the WAL's frames when the writer last looked (at most once a second, after a write).", nil, nil)
	ckptDesc         = prometheus.NewDesc("hearth_wal_checkpoints_total", "Checkpoints since start by kind (truncate: the writer's, once the WAL passes its limit; background: copying pages back beside the writer; catch-up: the writer's copy of what came meanwhile) and result (done; unfinished: a truncate that readers held off or that failed; failed).", []string{"checkpoint", "result"}, nil)
	restartDesc      = prometheus.NewDesc("hearth_wal_restarts_total", "Commits that found the WAL started over, every frame having been copied back.", nil, nil)
)

// storeCollector reads the store's gauges at each scrape.
type storeCollector struct{ m *Metrics }

func (c storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- recordsDesc
	ch <- jobsDesc
	ch <- backupTS
	ch <- backupAge
	ch <- modelUp
	ch <- modelCallsToday
	ch <- modelTokensToday
	ch <- modelSpent
	ch <- modelCalls
	ch <- modelTokens
	ch <- modelPaused
	ch <- extractionsDesc
	ch <- encoderUp
	ch <- vectorsDesc
	ch <- storeErrs
	ch <- waitingDesc
	ch <- commitsDesc
	ch <- writesDesc
	ch <- walDesc
	ch <- ckptDesc
	ch <- restartDesc
}

// storeTimeout bounds the store's part of a scrape.
const storeTimeout = 5 * time.Second

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	cfg := c.m.cfg
	if cfg.Gauges == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	g, err := cfg.Gauges(ctx)
	if err != nil {
		c.m.storeErrors.Add(1)
	}
	// Sent by this collector, so a scrape counts its own failure.
	ch <- prometheus.MustNewConstMetric(storeErrs, prometheus.CounterValue, float64(c.m.storeErrors.Load()))
	if err != nil {
		return
	}
	emit(ch, recordsDesc, g.Records, func(l [2]string) [2]string {
		return [2]string{closed(l[0], cfg.Types), closed(l[1], cfg.Statuses)}
	})
	emit(ch, jobsDesc, g.Jobs, func(l [2]string) [2]string {
		kind := l[0]
		if !kindPattern.MatchString(kind) {
			kind = Other
		}
		return [2]string{kind, closed(l[1], cfg.States)}
	})
	if !g.LastBackup.IsZero() {
		ch <- prometheus.MustNewConstMetric(backupTS, prometheus.GaugeValue, float64(g.LastBackup.UnixMilli())/1000)
		ch <- prometheus.MustNewConstMetric(backupAge, prometheus.GaugeValue, cfg.Now().Sub(g.LastBackup).Seconds())
	}
	for i, ms := range g.ModelServers {
		tier, pos := closed(ms.Tier, cfg.Tiers), strconv.Itoa(i)
		ch <- prometheus.MustNewConstMetric(modelUp, prometheus.GaugeValue, one(ms.Live), tier, pos)
		ch <- prometheus.MustNewConstMetric(modelCallsToday, prometheus.GaugeValue, float64(ms.CallsToday), tier, pos)
		ch <- prometheus.MustNewConstMetric(modelTokensToday, prometheus.GaugeValue, float64(ms.TokensToday), tier, pos)
		ch <- prometheus.MustNewConstMetric(modelSpent, prometheus.GaugeValue, one(ms.Spent), tier, pos)
		ch <- prometheus.MustNewConstMetric(modelCalls, prometheus.CounterValue, float64(ms.Calls), tier, pos)
		ch <- prometheus.MustNewConstMetric(modelTokens, prometheus.CounterValue, float64(ms.Tokens), tier, pos)
	}
	for _, o := range cfg.Outcomes {
		ch <- prometheus.MustNewConstMetric(extractionsDesc, prometheus.GaugeValue, float64(g.Extractions[o]), o)
	}
	if g.ModelsPaused != nil {
		ch <- prometheus.MustNewConstMetric(modelPaused, prometheus.GaugeValue, one(*g.ModelsPaused))
	}
	if e := g.Encoder; e != nil {
		ch <- prometheus.MustNewConstMetric(encoderUp, prometheus.GaugeValue, one(e.Live))
		if e.Counted {
			for _, v := range []struct {
				state string
				n     int
			}{{"current", e.Current}, {"stale", e.Stale}, {"missing", e.Missing}} {
				ch <- prometheus.MustNewConstMetric(vectorsDesc, prometheus.GaugeValue, float64(v.n), v.state)
			}
		}
	}
	if w := g.Writer; w != nil {
		ch <- prometheus.MustNewConstMetric(waitingDesc, prometheus.GaugeValue, float64(w.Waiting))
		ch <- prometheus.MustNewConstMetric(commitsDesc, prometheus.CounterValue, float64(w.Commits))
		ch <- prometheus.MustNewConstMetric(writesDesc, prometheus.CounterValue, float64(w.Writes))
		ch <- prometheus.MustNewConstMetric(walDesc, prometheus.GaugeValue, float64(w.WALBytes))
		for _, c := range []struct {
			checkpoint, result string
			n                  int
		}{
			{"truncate", "done", w.Truncate - w.TruncateUnfinished}, {"truncate", "unfinished", w.TruncateUnfinished},
			{"background", "done", w.Background - w.BackgroundFailed}, {"background", "failed", w.BackgroundFailed},
			{"catch-up", "done", w.CatchUp - w.CatchUpFailed}, {"catch-up", "failed", w.CatchUpFailed},
		} {
			ch <- prometheus.MustNewConstMetric(ckptDesc, prometheus.CounterValue, float64(c.n), c.checkpoint, c.result)
		}
		ch <- prometheus.MustNewConstMetric(restartDesc, prometheus.CounterValue, float64(w.Restarts))
	}
}

func one(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// emit sends one gauge per label pair, summing pairs that close to the same
// labels.
func emit(ch chan<- prometheus.Metric, d *prometheus.Desc, counts []Count, close func([2]string) [2]string) {
	sums := map[[2]string]int{}
	var order [][2]string
	for _, c := range counts {
		l := close(c.Labels)
		if _, ok := sums[l]; !ok {
			order = append(order, l)
		}
		sums[l] += c.N
	}
	for _, l := range order {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(sums[l]), l[0], l[1])
	}
}

func closed(v string, set []string) string {
	if slices.Contains(set, v) {
		return v
	}
	return Other
}

// CodeName returns the canonical name of c as google.rpc.Code spells it
// (the access log and error bodies spell it so), or "UNKNOWN" for a code
// gRPC does not define.
func CodeName(c codes.Code) string {
	if n, ok := rpccode.Code_name[int32(c)]; ok {
		return n
	}
	return rpccode.Code_UNKNOWN.String()
}
