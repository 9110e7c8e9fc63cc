package harness

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
)

// Print writes the report as the seed-style table: one block per mode,
// its "all" row and a row per kind, with wins and losses against fts.
func (r *Report) Print(w io.Writer) error {
	var kinds []string
	for _, k := range append(slices.Clone(Kinds), KindNone) {
		if n := r.Set.Kinds[k]; n > 0 {
			kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
		}
	}
	fmt.Fprintf(w, "Hearth retrieval eval: %d records, %d queries (%s), search limit %d\n",
		r.Set.Records, r.Set.Queries, strings.Join(kinds, ", "), r.Limit)
	fmt.Fprintf(w, "set %s, hearth %s on %s, %s\n\n", r.Set.Digest, r.Hearth, cmp.Or(r.Backend, "sqlite"), r.Date.Format("2006-01-02 15:04 MST"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mode\tkind\tqueries\trecall@5\trecall@10\tMRR\twins\tlosses")
	var notes []string
	for _, m := range r.Modes {
		if !m.Ran {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\n", m.Mode)
			notes = append(notes, fmt.Sprintf("%s: not run: %s", m.Mode, m.Reason))
			continue
		}
		if mode, _ := ModeNamed(m.Mode); mode.HookOnly {
			notes = append(notes, fmt.Sprintf("%s: in the prompt hook table only (a search that does not abstain is not reranked)", m.Mode))
			continue
		}
		for i, row := range m.Rows {
			name := ""
			if i == 0 {
				name = m.Mode
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f\t%.3f\t%.3f\t%s\t%s\n",
				name, row.Kind, row.Queries, row.Recall5, row.Recall10, row.MRR, count(row.Wins), count(row.Losses))
		}
		if m.Fallbacks > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d of %d queries were answered with another ranking than %s", m.Mode, m.Fallbacks, len(m.Results), m.Mode))
		}
		if m.Truncated > 0 {
			hits := 0
			for _, q := range m.Results {
				hits += q.Hits
			}
			notes = append(notes, fmt.Sprintf("%s: the search budget cut the hits of %d of %d queries (%.1f hits returned on average)",
				m.Mode, m.Truncated, len(m.Results), float64(hits)/float64(len(m.Results))))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nwins, losses: queries a mode answers better or worse than fts (recall@10, then reciprocal rank)")
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	return r.printHook(w)
}

func count(n int) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

// WriteFile writes the report as indented JSON, creating the directory.
func (r *Report) WriteFile(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadReport reads a results file WriteFile wrote.
func ReadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Format != ReportFormat {
		return nil, fmt.Errorf("%s: results format %d, want %d", path, r.Format, ReportFormat)
	}
	return &r, nil
}

// PrintCompare writes how r differs from an earlier report: each row's
// change in recall@5, recall@10 and MRR, then the queries whose result
// changed (when both measured the same set).
func (r *Report) PrintCompare(w io.Writer, old *Report) error {
	fmt.Fprintf(w, "\nChange since %s (hearth %s):\n", old.Date.Format("2006-01-02 15:04 MST"), old.Hearth)
	same := old.Set.Digest == r.Set.Digest
	if !same {
		fmt.Fprintf(w, "the sets differ (%s then, %s now): rows compare, queries do not\n", old.Set.Digest, r.Set.Digest)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mode\tkind\tΔ recall@5\tΔ recall@10\tΔ MRR")
	var changed []string
	for _, m := range r.Modes {
		o, ok := old.Mode(m.Mode)
		if !m.Ran || !ok || !o.Ran {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\n", m.Mode)
			continue
		}
		for _, row := range m.Rows {
			or, ok := o.Row(row.Kind)
			if !ok {
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%+.3f\t%+.3f\t%+.3f\n", m.Mode, row.Kind,
				row.Recall5-or.Recall5, row.Recall10-or.Recall10, row.MRR-or.MRR)
		}
		if !same {
			continue
		}
		before := make(map[string]QueryResult, len(o.Results))
		for _, q := range o.Results {
			before[q.ID] = q
		}
		for _, q := range m.Results {
			b, ok := before[q.ID]
			if !ok {
				continue
			}
			switch compare(q, b) {
			case 1:
				changed = append(changed, fmt.Sprintf("%s %s better: answers at %v, were at %v", m.Mode, q.ID, ranks(q), ranks(b)))
			case -1:
				changed = append(changed, fmt.Sprintf("%s %s worse: answers at %v, were at %v", m.Mode, q.ID, ranks(q), ranks(b)))
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range changed {
		fmt.Fprintln(w, c)
	}
	return nil
}

// ranks formats a result's answer positions, "-" for not returned.
func ranks(q QueryResult) string {
	s := make([]string, len(q.Ranks))
	for i, r := range q.Ranks {
		s[i] = "-"
		if r > 0 {
			s[i] = fmt.Sprint(r)
		}
	}
	return strings.Join(s, ",")
}
