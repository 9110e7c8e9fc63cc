package harness

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// The prompt hook's search, as `hearth hook prompt` asks it
// (cmd/hearth/internal/hook): at most HookLimit hits, min_cosine
// HookMinCosine, recall (not recorded as a question), and abstain, which
// asks the server for its relevance bar (docs/abstention.md).
const (
	HookLimit     = 3
	HookMinCosine = 0.35
)

// hookHeader is the first line the hook injects before its hits.
const hookHeader = "Hearth memory that may bear on this prompt (full records by id with memory_get):\n"

// HookResult is what the prompt hook would inject for one query: the
// answers' positions among the injected hits, how many characters it would
// inject, and each hit's coverage as the server's why reports it.
type HookResult struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Ranking is the ranking the search reply reported.
	Ranking string `json:"ranking,omitempty"`
	Ranks   []int  `json:"ranks"`
	Chars   int    `json:"chars"`
	// Coverage is each hit's "covers" figure, in hit order.
	Coverage []float64 `json:"coverage"`
	// Lines are the characters each hit's line adds.
	Lines []int `json:"lines"`
}

// HookRow is one line of the hook table: a relevance bar (off: the search
// without abstain, as the hook asked before it had one; server: with
// abstain, the server's own bar; a number: with abstain, on a daemon whose
// min_coverage is that number) over the answerable and the unanswerable
// queries.
type HookRow struct {
	Bar string `json:"bar"`
	// Answerable queries: recall@3 of what is injected, and the share with
	// at least one answer injected (an evidence record injected).
	Answerable int     `json:"answerable"`
	Recall3    float64 `json:"recall_at_3"`
	Evidence   float64 `json:"evidence"`
	// Unanswerable queries (kind none): the share with nothing injected.
	Unanswerable int     `json:"unanswerable"`
	Abstained    float64 `json:"abstained"`
	// Median characters injected per query, answerable and unanswerable.
	MedianAnswerable   int `json:"median_chars_answerable"`
	MedianUnanswerable int `json:"median_chars_unanswerable"`
}

type hookReply struct {
	Ranking string `json:"ranking"`
	Hits    []struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Title   string `json:"title"`
		Snippet string `json:"snippet"`
		Why     string `json:"why"`
	} `json:"hits"`
}

// hookSearch runs q as the prompt hook does under m, with or without
// abstain, and measures what would be injected.
func (c *client) hookSearch(ctx context.Context, q Query, m Mode, abstain bool, ids map[string]string) (HookResult, error) {
	args := map[string]any{"query": q.Query, "namespace": q.Namespace, "limit": HookLimit,
		"min_cosine": HookMinCosine, "recall": true, "abstain": abstain}
	for k, v := range m.Args {
		args[k] = v
	}
	var out hookReply
	if err := c.call(ctx, "memory_search", args, &out); err != nil {
		return HookResult{}, fmt.Errorf("query %s: %w", q.ID, err)
	}
	res := HookResult{ID: q.ID, Kind: q.Kind, Ranking: out.Ranking, Ranks: make([]int, len(q.Answers))}
	pos := map[string]int{}
	for i, h := range out.Hits {
		pos[h.ID] = i + 1
		// The hook's line: "- type: title [id] — snippet".
		line := fmt.Sprintf("- %s: %s [%s]", h.Type, oneLine(h.Title), h.ID)
		if sn := oneLine(h.Snippet); sn != "" {
			line += " — " + sn
		}
		res.Lines = append(res.Lines, utf8.RuneCountInString(line)+1)
		res.Coverage = append(res.Coverage, coverageOf(h.Why))
	}
	for i, k := range q.Answers {
		res.Ranks[i] = pos[ids[k]]
	}
	res.Chars = injected(res.Lines)
	return res, nil
}

// injected is how many characters the hook injects for hits whose lines
// take lines characters: nothing without a hit.
func injected(lines []int) int {
	if len(lines) == 0 {
		return 0
	}
	n := utf8.RuneCountInString(hookHeader)
	for _, l := range lines {
		n += l
	}
	return n
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// coverageOf reads "covers 0.62" from a hit's why; -1 when absent.
func coverageOf(why string) float64 {
	_, after, ok := strings.Cut(why, "covers ")
	if !ok {
		return -1
	}
	f, err := strconv.ParseFloat(strings.Fields(after)[0], 64)
	if err != nil {
		return -1
	}
	return f
}

// hookRow aggregates results under one bar.
func hookRow(bar string, results []HookResult) HookRow {
	row := HookRow{Bar: bar}
	var ans, none []int
	for _, r := range results {
		if r.Kind == KindNone {
			row.Unanswerable++
			if r.Chars == 0 {
				row.Abstained++
			}
			none = append(none, r.Chars)
			continue
		}
		row.Answerable++
		found := 0
		for _, p := range r.Ranks {
			if p > 0 {
				found++
			}
		}
		if len(r.Ranks) > 0 {
			row.Recall3 += float64(found) / float64(len(r.Ranks))
		}
		if found > 0 {
			row.Evidence++
		}
		ans = append(ans, r.Chars)
	}
	if row.Answerable > 0 {
		row.Recall3 /= float64(row.Answerable)
		row.Evidence /= float64(row.Answerable)
	}
	if row.Unanswerable > 0 {
		row.Abstained /= float64(row.Unanswerable)
	}
	row.MedianAnswerable, row.MedianUnanswerable = median(ans), median(none)
	return row
}

func median(xs []int) int {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// HookRows are the hook table's first rows for a mode: without a bar and
// with the server's.
func HookRows(off, server []HookResult) []HookRow {
	return []HookRow{hookRow("off", off), hookRow("server", server)}
}

// printHook writes the hook table.
func (r *Report) printHook(w io.Writer) error {
	fmt.Fprintf(w, "\nPrompt hook view: what `hearth hook prompt` injects (at most %d hits, as the hook asks); bar off = no relevance bar, server = the server's (default min_coverage), a number = the server's with min_coverage at that number\n", HookLimit)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mode\tbar\tanswerable\trecall@3\tevidence\tunanswerable\tabstained\tmedian chars (answerable)\tmedian chars (unanswerable)")
	for _, m := range r.Modes {
		for i, row := range m.Hook {
			name := ""
			if i == 0 {
				name = m.Mode
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f\t%.3f\t%d\t%.3f\t%d\t%d\n", name, row.Bar, row.Answerable, row.Recall3,
				row.Evidence, row.Unanswerable, row.Abstained, row.MedianAnswerable, row.MedianUnanswerable)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "evidence: answerable queries with at least one answer injected; abstained: unanswerable queries with nothing injected")
	for _, m := range r.Modes {
		if m.Ran && slices.ContainsFunc(Modes, func(x Mode) bool { return x.Name == m.Mode && x.Rerank }) {
			fmt.Fprintf(w, "%s: the rerank server ordered %d of %d searches with the bar (the others fell back to the order and bar without it)\n",
				m.Mode, m.HookReranked, len(m.HookServer))
		}
	}
	return nil
}
