package page

import _ "embed"

// The dashboard's markup, section by section (markup.go says why it is Go
// code). Each function writes what its section's view holds.

// baseCSS is the style the dashboard and the record views share.
//
//go:embed page.css
var baseCSS string

func writePage(w *htmlWriter, v *view) {
	w.s(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Hearth</title>
<link rel="icon" href="data:,">
<style>
`)
	w.s(baseCSS)
	w.s(`
form.find { display: flex; gap: 6px; margin-left: auto; }
form.find input { background: #0b0e12; color: #e8ecf2; border: 1px solid #2a313b; border-radius: 6px; padding: 5px 8px; width: 240px; font: 14px system-ui, sans-serif; }
form.find button { background: #24456b; color: #f0f4fa; border: 1px solid #3b6390; border-radius: 6px; padding: 5px 12px; font: 14px system-ui, sans-serif; }
svg a:hover rect { opacity: .8; }
</style>
</head>
<body>
<header>
<h1>Hearth</h1>
<span class="muted">memory for coding agents</span>
`)
	w.f(`<span class="muted" id="as-of">as of %v</span>
<a href="./">Refresh</a>
<a href="records" id="browse">Browse records</a>
<form class="find" method="get" action="records"><input type="search" name="q" maxlength="1000" placeholder="Search every namespace" aria-label="Search records"><button type="submit">Search</button></form>
</header>

<div class="tiles">`, v.Now)
	writeTiles(w, v.Tiles)
	w.s("\n</div>\n")
	writeStore(w, &v.Store)
	w.s(`

<div class="grid">
<section id="types">
<h2>Records by type and status</h2>`)
	switch {
	case v.StatusErr != "":
		w.f("\n<p class=\"err\">%v</p>", v.StatusErr)
	case len(v.Types.Rows) == 0:
		w.s("\n<p class=\"muted\">No records yet.</p>")
	default:
		w.f(`
<svg viewBox="0 0 %v %v" role="img" aria-label="Records by type and status">`, v.Types.Width, v.Types.Height)
		for _, row := range v.Types.Rows {
			w.f(`
<g class="type-row" data-type="%v" data-total="%v">
<text x="0" y="%v">%v</text>`, row.Type, row.Total, row.TextY, row.Type)
			for _, s := range row.Segs {
				w.f(`
<a href="%v"><rect x="%v" y="%v" width="%v" height="16" fill="%v"><title>%v</title></rect></a>`,
					href(s.Href), s.X, row.BarY, s.W, s.Color, s.Title)
			}
			w.f(`
<text x="%v" y="%v">%v</text>
</g>`, row.CountX, row.TextY, row.Total)
		}
		writeLegend(w, v.Types.Legend, v.Types.LegendY, "2")
		w.s("\n</svg>")
	}
	w.s(`
</section>

<section id="namespaces">
<h2>Namespaces</h2>`)
	switch {
	case v.StatusErr != "":
		w.f("\n<p class=\"err\">%v</p>", v.StatusErr)
	case len(v.Namespaces.Rows) == 0:
		w.s("\n<p class=\"muted\">No namespace holds records yet.</p>")
	default:
		ns := &v.Namespaces
		w.f(`
<svg viewBox="0 0 %v %v" role="img" aria-label="Records per namespace">`, ns.Width, ns.Height)
		for _, r := range ns.Rows {
			w.f(`
<g class="ns-row" data-namespace="%v" data-records="%v">
<title>%v: %v records</title>
<text class="mono" x="0" y="%v">%v</text>
<a href="%v"><rect x="%v" y="%v" width="%v" height="16" rx="2" fill="#4fb89a"/></a>
<text x="%v" y="%v">%v</text>
</g>`, r.Namespace, r.Records, r.Namespace, r.Records, r.TextY, r.Label,
				href(r.Href), ns.BarX, r.BarY, r.W, r.CountX, r.TextY, r.Records)
		}
		w.s("\n</svg>")
		if ns.More != 0 {
			w.f("\n<p class=\"muted small\">and %v more namespaces with %v records.</p>", ns.More, ns.MoreRecs)
		}
	}
	w.f(`
</section>
</div>

<section id="hours">
<h2>Audit rows per hour <span class="muted small">last %v h</span></h2>`, v.HoursLen)
	if v.AuditErr != "" {
		w.f("\n<p class=\"err\">%v</p>", v.AuditErr)
	} else {
		writeHours(w, &v.Hours)
	}
	w.s(`
</section>

<div class="grid">
<section id="models">
<h2>Model servers and encoder</h2>`)
	writeModels(w, &v.Models)
	w.s("\n<table>\n<tr><th>option</th><th>server</th><th>state</th></tr>")
	e := v.Encoder
	w.f("\n<tr><td class=\"mono\">%v</td><td class=\"wrap\">", e.Role)
	if e.URL != "" {
		w.f(`<code>%v</code> <span class="pill">%v</span> <span class="muted small">%v</span>`, e.URL, e.Kind, e.Model)
	} else {
		w.s(`<span class="muted">–</span>`)
	}
	w.f(`</td><td>%v</td></tr>
</table>
</section>

<section id="jobs">
<h2>Nightly review and anchor sweep</h2>
<dl>
<dt>nightly review</dt><dd id="review-state">%v</dd>`, e.State, v.Review.State)
	if v.Review.Detail != "" {
		w.f(`<dt></dt><dd class="muted">%v</dd>`, v.Review.Detail)
	}
	w.f(`
<dt>schedule</dt><dd>%v</dd>
<dt>anchor sweep</dt><dd id="sweep-state">%v</dd>
<dt></dt><dd class="muted" id="sweep-detail">%v</dd>
<dt>schedule</dt><dd>%v</dd>
</dl>
</section>
</div>

`, v.Review.Schedule, v.Sweep.State, v.Sweep.Detail, v.Sweep.Schedule)
	writeAnchors(w, &v.Anchors)
	w.s("\n")
	writeVectors(w, &v.Vectors)
	w.s(`

<section id="unused">
<h2>Unused records</h2>`)
	if v.Unused.State != "" {
		w.f(`
<p><span class="pill" id="unused-state">%v</span> <span class="muted">%v</span></p>`, v.Unused.State, v.Unused.Detail)
	} else {
		w.s(`
<div class="scroll"><table>
<tr><th>title</th><th>namespace</th><th>type</th><th>created</th><th>last returned</th></tr>`)
		for _, r := range v.Unused.Records {
			w.s("\n<tr><td class=\"wrap\">")
			writeLink(w, r.Href, r.Title)
			w.f(`</td><td class="mono">%v</td><td>%v</td><td>%v</td><td>%v</td></tr>`, r.Namespace, r.Type, r.Created, r.LastReturned)
		}
		w.s("\n</table></div>")
		if v.Unused.Detail != "" {
			w.f("<p class=\"muted small\">%v</p>", v.Unused.Detail)
		}
	}
	w.f(`
</section>

%v

<section id="clients">
<h2>Clients and how to connect them</h2>
<p class="muted">Agents connect to <code>%v</code> (%v).`, v.Questions, v.Endpoint.URL(), v.Endpoint.How)
	if v.ViaProxy {
		w.s(" If you mapped port 8765 to another host port in the add-on's Network settings, use that port.")
	}
	w.s(`
On the machine that runs the agent, keep the client's token in a file only you can read, then let
<code>hearth connect</code> register the MCP server and the hooks (<code>make install</code> in a clone of
the Hearth repository puts <code>hearth</code> on your PATH). Select a box to copy it whole.</p>`)
	for i := range v.Clients {
		writeClient(w, &v.Clients[i])
	}
	w.s(`
</section>

<section id="audit">
<h2>Latest audit rows</h2>`)
	switch {
	case v.AuditErr != "":
		w.f("\n<p class=\"err\">%v</p>", v.AuditErr)
	case len(v.Audit) == 0:
		w.s("\n<p class=\"muted\">No audit rows yet.</p>")
	default:
		w.s(`
<div class="scroll"><table>
<tr><th>at</th><th>client</th><th>action</th><th>namespace</th><th>record</th><th>detail</th></tr>`)
		for _, r := range v.Audit {
			w.f(`
<tr><td class="nw">%v</td><td class="nw">%v</td><td class="nw">%v</td><td class="mono">%v</td><td class="mono small">`,
				r.At, r.Client, r.Action, r.Namespace)
			writeLink(w, r.Href, r.RecordID)
			w.f(`</td><td class="wrap">%v</td></tr>`, r.Detail)
		}
		w.s("\n</table></div>")
	}
	w.s(`
</section>
</body>
</html>
`)
}

// writeTiles writes the tiles of the dashboard or a record, each on a line
// of its own.
func writeTiles(w *htmlWriter, tiles []tile) {
	for _, t := range tiles {
		w.f(`
<div class="tile" id="tile-%v"><b>%v</b><span>%v</span><small>%v</small></div>`, t.Key, t.Value, t.Label, t.Note)
	}
}

// writeLegend writes a chart's legend: a swatch (corners of radius rx) and
// a label for each item.
func writeLegend(w *htmlWriter, items []legendItem, y, rx string) {
	for _, l := range items {
		w.f(`
<rect x="%v" y="%v" width="10" height="10" rx="%v" fill="%v"/>
<text class="dim" x="%v" dx="14" dy="10" y="%v">%v</text>`, l.X, y, markup(rx), l.Color, l.X, y, l.Label)
	}
}

// writeLink writes text, linked to target unless target is "".
func writeLink(w *htmlWriter, target, text string) {
	if target != "" {
		w.f(`<a href="%v">%v</a>`, href(target), text)
		return
	}
	w.f("%v", text)
}

func writeHours(w *htmlWriter, h *hourChart) {
	w.f(`
<svg viewBox="0 0 %v 150" role="img" aria-label="Audit rows per hour" data-since="%v" data-total="%v">
<line x1="40" y1="118.5" x2="%v" y2="118.5"/>
<text class="dim" x="34" y="16" text-anchor="end">%v</text>
<text class="dim" x="34" y="118" text-anchor="end">0</text>`,
		h.Width, h.Since.Format("2006-01-02T15:04:05Z07:00"), h.Total, h.Width, h.Max)
	for _, b := range h.Bars {
		w.f(`
<rect x="%v" y="%v" width="%v" height="%v" rx="1" fill="#5b9ee6" data-n="%v"><title>%v</title></rect>`, b.X, b.Y, b.W, b.H, b.N, b.Title)
	}
	for _, l := range h.Labels {
		w.f("\n<text class=\"dim\" x=\"%v\" y=\"136\"", l.X)
		if l.End {
			w.s(` text-anchor="end"`)
		}
		w.f(">%v</text>", l.Text)
	}
	w.f(`
</svg>
<p class="muted small">%v audit rows since %v.`, h.Total, h.Since.Format("Mon 15:04"))
	if h.Partial {
		w.f(" Only the latest 500 rows are read: hours before %v are undercounted.", h.Oldest.Format("Mon 15:04"))
	}
	w.s("</p>")
}

func writeClient(w *htmlWriter, c *clientView) {
	w.f(`
<div class="client" id="client-%v">
<h3>%v <span class="pill">%v</span></h3>
<p class="muted small">%v</p>`, c.Name, c.Name, c.Scopes, c.Kind)
	if c.Token != "" {
		w.f(`
<div class="small muted">token</div>
<code class="token">%v</code>`, c.Token)
	}
	if c.TokenNote != "" {
		w.f(`<p class="note small">%v</p>`, c.TokenNote)
	}
	if c.TokenErr != "" {
		w.f(`<p class="err small">%v</p>`, c.TokenErr)
	}
	if c.Save != "" {
		w.f(`
<div class="small muted">1. the token, in a file only you can read</div>
<pre>%v</pre>`, c.Save)
	}
	for _, k := range c.Connects {
		w.f("\n<div class=\"small muted\">%v%v: %v", k.Step, k.Label, k.What)
		if k.Env != "" {
			w.f("; %v reads the MCP token from HEARTH_TOKEN where it starts", k.Label)
		}
		w.f("</div>\n<pre>%v", k.Cmd)
		if k.Env != "" {
			w.f("\n%v", k.Env)
		}
		w.s("</pre>")
	}
	w.f("\n<p class=\"muted small\">%v</p>", c.Rotate)
	if c.RotateCmd != "" {
		w.f("\n<pre>%v</pre>", c.RotateCmd)
	}
	w.s("\n</div>")
}

func writeStore(w *htmlWriter, s *storeView) {
	if s.Known {
		class := ""
		if s.Alert {
			class = "alert"
		}
		w.f(`
<section id="store" class="%v" data-state="%v">
<h2>Database <span class="pill" id="store-state">%v</span></h2>`, class, s.State, s.Label)
		for _, p := range s.Problems {
			w.f("\n<p class=\"err\">%v</p>", p)
		}
		w.f("\n<dl>\n<dt>backend</dt><dd id=\"store-backend\">%v</dd>", s.Backend)
		if s.Database != "" {
			w.f("\n<dt>database</dt><dd><code>%v</code></dd>", s.Database)
		} else {
			w.f(`
<dt>file</dt><dd><code>%v</code></dd>
<dt>disk</dt><dd id="store-free">%v</dd>`, s.Path, s.Free)
			if s.Refused != "" {
				w.f("\n<dt>refused</dt><dd id=\"store-refused\">%v</dd>", s.Refused)
			}
			if len(s.Damage) > 0 {
				w.s("\n<dt>findings</dt><dd id=\"store-damage\">")
				for _, d := range s.Damage {
					w.f(`<div class="small">%v</div>`, d)
				}
				w.s("</dd>")
			}
			w.f(`
<dt>last check</dt><dd id="store-check">%v</dd>
<dt>write-ahead log</dt><dd>%v</dd>`, s.Check, s.WAL)
		}
		w.s("\n</dl>\n</section>")
	}
	w.s("\n")
}

func writeModels(w *htmlWriter, m *modelsView) {
	switch {
	case m.Err != "":
		w.f("\n<p class=\"err\">%v</p>", m.Err)
	case !m.Configured:
		w.s("\n<p class=\"muted\" id=\"models-state\">No model server is configured (ollama_url): no extraction and no nightly review; everything else works without a model.</p>")
	default:
		w.s(`
<div class="scroll"><table id="model-servers">
<tr><th>option</th><th>server</th><th>state</th><th>last probe</th><th>in flight</th><th>calls</th><th>today</th><th>failures by model</th></tr>`)
		for _, s := range m.Servers {
			w.f(`
<tr class="model-server" data-url="%v" data-state="%v"><td class="mono">%v</td>
<td class="wrap"><code>%v</code> <span class="pill">%v</span>`, href(s.URL), s.State, s.Option, s.URL, s.Kind)
			if s.Models != "" {
				w.f(` <span class="muted small">%v</span>`, s.Models)
			}
			w.f(`</td>
<td class="nw"><svg class="dot" width="10" height="10" viewBox="0 0 10 10" aria-hidden="true"><circle cx="5" cy="5" r="4" fill="%v"/></svg> %v`, s.Color, s.State)
			if s.ProbeError != "" {
				w.f(`<div class="muted small">%v</div>`, s.ProbeError)
			}
			w.f(`</td>
<td class="nw">%v</td><td>%v</td><td>%v</td><td class="nw budget-today">%v`, s.LastProbe, s.InFlight, s.Calls, s.Today)
			if s.Spent {
				w.s(` <span class="pill">budget spent</span>`)
			}
			w.f(`</td><td class="wrap">%v</td></tr>`, s.Failures)
		}
		w.s("\n</table></div>")
		if m.Budget != "" {
			w.f("\n<p class=\"muted small\" id=\"models-budget\">%v</p>", m.Budget)
		}
		if m.BudgetState != "" {
			w.f("\n<p class=\"err\" id=\"models-budget-state\">%v</p>", m.BudgetState)
		}
		if len(m.Chains) > 0 {
			w.s("\n<p class=\"muted small\">models: ")
			for i, c := range m.Chains {
				if i > 0 {
					w.s("; ")
				}
				w.f("%v %v", c.Kind, c.Models)
			}
			w.s("</p>")
		}
	}
	w.s("\n<p id=\"models-waiting\"")
	if m.Waiting != 0 {
		w.s(` class="err"`)
	} else {
		w.s(` class="muted small"`)
	}
	w.f(">jobs waiting for a model: %v", m.Waiting)
	if m.Jobs != "" {
		w.f(` <span class="muted small">(%v)</span>`, m.Jobs)
	}
	w.s("</p>\n")
}

func writeAnchors(w *htmlWriter, a *anchorsView) {
	w.s(`
<section id="flagged">
<h2>Records with unavailable anchors <span class="muted small">flagged, never hidden</span></h2>`)
	switch {
	case a.Err != "":
		w.f("\n<p class=\"err\">%v</p>", a.Err)
	case len(a.Rows) == 0:
		w.s("\n<p class=\"muted\" id=\"flagged-state\">No record depends on something found unavailable.</p>")
	default:
		w.s(`
<div class="scroll"><table>
<tr><th>title</th><th>namespace</th><th>anchor</th><th>since</th><th>found by</th><th>detail</th></tr>`)
		for _, r := range a.Rows {
			w.f(`
<tr class="flagged-row" data-id="%v"><td class="wrap">%v <span class="pill">%v`, r.ID, r.Title, r.Type)
			if r.Status != "active" {
				w.f(", %v", r.Status)
			}
			w.f(`</span></td><td class="mono">%v</td><td class="mono wrap">%v`, r.Namespace, r.Anchor)
			if r.Count > 1 {
				w.f(` <span class="muted small">and %v in all</span>`, r.Count)
			}
			w.f(`</td><td class="nw">%v</td><td class="nw">%v</td><td class="wrap">%v</td></tr>`, r.Since, r.CheckedBy, r.Detail)
		}
		w.f("\n</table></div>\n<p class=\"muted small\" id=\"flagged-total\">%v flagged", a.Total)
		if a.More != 0 {
			w.f("; %v more not shown", a.More)
		}
		w.s(".</p>")
	}
	w.s("\n</section>\n")
}

func writeVectors(w *htmlWriter, v *vectorsView) {
	if !v.Shown {
		return
	}
	w.f(`
<section id="encoder">
<h2>Encoder and vectors</h2>
<dl>
<dt>encoder</dt><dd><span class="pill" id="encoder-state">%v</span> <span class="muted small">last probe %v</span></dd>
<dt>model</dt><dd class="mono">%v</dd>
<dt>snapshot</dt><dd class="mono" id="encoder-snapshot">%v</dd>
<dt>dimensions</dt><dd>%v</dd>`, v.State, v.LastProbe, v.Model, v.Snapshot, v.Dim)
	if v.Error != "" {
		w.f(`<dt>last error</dt><dd class="muted wrap">%v</dd>`, v.Error)
	}
	w.s(`
</dl>
<svg viewBox="0 0 600 44" width="100%" role="img" aria-label="record vectors by state">`)
	for _, b := range v.Bars {
		if b.N != 0 {
			w.f(`
<rect x="%v" y="0" width="%v" height="18" fill="%v"><title>%v %v</title></rect>`, num(b.X), num(b.W), b.Color, b.N, b.Label)
		}
	}
	if v.Total == 0 {
		w.s(`<rect x="0" y="0" width="600" height="18" fill="#30363d"/>`)
	}
	w.s("\n</svg>")
	if v.Counted {
		w.f(`
<p id="encoder-vectors">%v current · %v stale · %v missing <span class="muted small">(live records)</span></p>`, v.Current, v.Stale, v.Missing)
	} else {
		w.s(`
<p id="encoder-vectors">not counted yet <span class="muted small">(the vectors are counted once the encoder has answered a probe with its model and snapshot)</span></p>`)
	}
	w.f("\n<p class=\"muted small\">%v</p>\n</section>\n", v.Note)
}
