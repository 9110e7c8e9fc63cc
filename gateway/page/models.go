package page

import (
	"strconv"
	"strings"
	"time"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
)

// The model servers panel (docs/design.md R-P, R-M3..R-M5): each server as
// memory_status reports it — its option, wire format, live or down, last
// probe, calls in flight and failures by model, what it spent of its daily
// budget — the model chains, the budget (paused, or spent: model work
// waits, capture goes on without the model), and the jobs that wait for a
// model. It reads memory_status only; pausing and resuming are the admin
// tools memory_model_pause and memory_model_resume (the page has no form
// that writes).

// modelsView is the panel.
type modelsView struct {
	// Err is memory_status's failure; the panel shows only it.
	Err        string
	Configured bool
	Servers    []serverRow
	Chains     []chainRow
	// Waiting is the jobs queued until a model server is live; Jobs
	// describes the model jobs by state.
	Waiting uint32
	Jobs    string
	// Live and Total count the servers, for the tile.
	Live, Total int
	// Budget describes the daily cap; BudgetState says whether model work
	// waits on it ("" when it does not).
	Budget, BudgetState string
}

type serverRow struct {
	Option, URL, Kind string
	State, Color      string
	LastProbe         string
	ProbeError        string
	Models            string
	InFlight, Calls   uint32
	Failures          string
	// Today is what it spent on the budget day; Spent whether it reached
	// its cap.
	Today string
	Spent bool
}

type chainRow struct {
	Kind, Models string
}

// tierOption names the option a tier comes from.
var tierOption = map[string]string{"primary": "ollama_url", "fallback": "ollama_fallback_url", "direct": "ollama_direct_urls"}

// modelJobKinds are the jobs that need a model.
var modelJobKinds = []string{"extraction", "review"}

// newModelsView builds the panel from memory_status (st is nil when the
// call failed with err).
func newModelsView(st *hearthv1.StatusResponse, err error, loc *time.Location) modelsView {
	if err != nil {
		return modelsView{Err: callError("memory_status", err)}
	}
	v := modelsView{Configured: st.GetModelsConfigured(), Waiting: st.GetJobsWaitingForModel()}
	for _, s := range st.GetModelServers() {
		row := serverRow{
			Option: tierOption[s.GetTier()], URL: s.GetUrl(), Kind: serverKind(s.GetUrl()),
			ProbeError: s.GetProbeError(), Models: strings.Join(s.GetModels(), ", "),
			InFlight: s.GetCallsInFlight(), Calls: s.GetCalls(), Failures: "none",
			Today: itoa64(s.GetCallsToday()) + " calls, " + itoa64(s.GetPromptTokensToday()+s.GetReplyTokensToday()) + " tokens",
			Spent: s.GetBudgetSpent(),
		}
		switch {
		case !s.GetLive():
			row.State, row.Color = "down", "#e0605a"
		case !s.GetProbed():
			row.State, row.Color = "not probed yet", "#8b95a5"
		default:
			row.State, row.Color = "live", "#4fb89a"
		}
		row.LastProbe = "never"
		if s.GetLastProbe() != nil {
			row.LastProbe = s.GetLastProbe().AsTime().In(loc).Format(timeLayout)
		}
		if s.GetLive() {
			v.Live++
		}
		var fails []string
		for _, f := range s.GetFailures() {
			fails = append(fails, f.GetModel()+": "+strconv.FormatUint(uint64(f.GetCount()), 10))
		}
		if len(fails) > 0 {
			row.Failures = strings.Join(fails, ", ")
		}
		v.Servers = append(v.Servers, row)
	}
	v.Total = len(v.Servers)
	if b := st.GetModelBudget(); b != nil {
		v.Budget, v.BudgetState = budgetLine(b, loc)
	}
	for _, c := range st.GetModelChains() {
		v.Chains = append(v.Chains, chainRow{Kind: c.GetKind(), Models: strings.Join(c.GetModels(), " → ")})
	}
	var jobs []string
	for _, k := range modelJobKinds {
		var states []string
		for _, j := range st.GetJobs() {
			if j.GetKind() == k && j.GetState() != "done" {
				states = append(states, itoa(j.GetCount())+" "+j.GetState())
			}
		}
		if len(states) > 0 {
			jobs = append(jobs, k+": "+strings.Join(states, ", "))
		}
	}
	v.Jobs = strings.Join(jobs, "; ")
	return v
}

// budgetLine describes the daily budget and, when model work waits on it,
// why.
func budgetLine(b *hearthv1.ModelBudget, loc *time.Location) (line, state string) {
	cap := func(n uint64, unit string) string {
		if n == 0 {
			return "no cap on " + unit
		}
		return itoa64(n) + " " + unit
	}
	resets := ""
	if b.GetResetsAt() != nil {
		resets = b.GetResetsAt().AsTime().In(loc).Format(timeLayout)
	}
	line = "budget per server and day: " + cap(b.GetDailyCalls(), "calls") + ", " + cap(b.GetDailyTokens(), "tokens") +
		" (day " + b.GetDay() + ", starts over " + resets + ")"
	switch {
	case b.GetPaused():
		state = "model calls are paused (memory_model_resume lets them go): extraction and the review wait, queued; capture and answers go on without the model"
	case b.GetWaiting():
		state = "the daily budget is spent on every live server: extraction and the review wait until the day starts over or memory_model_resume; capture and answers go on without the model"
	}
	return line, state
}

func itoa64(n uint64) string { return strconv.FormatUint(n, 10) }

// tile is the model servers tile: live of configured.
func (v modelsView) tile() (value, note string) {
	switch {
	case v.Err != "":
		return "?", "status unavailable"
	case v.Total == 0:
		return "none", "configured"
	}
	return itoa(v.Live) + "/" + itoa(v.Total), "live"
}
