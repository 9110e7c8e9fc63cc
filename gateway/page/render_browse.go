package page

// The markup of the records and record views (markup.go says why it is Go
// code).

// writeBrowseHead writes the head and the header of a records or record
// view titled title, as of now.
func writeBrowseHead(w *htmlWriter, title, now string) {
	w.f(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>%v – Hearth</title>
<link rel="icon" href="data:,">
<style>
`, title)
	w.s(baseCSS)
	w.s(`
h1 a { color: inherit; text-decoration: none; }
nav.top { display: flex; gap: 14px; }
form.filters { display: flex; flex-wrap: wrap; gap: 10px 16px; align-items: flex-end; }
form.filters label { display: flex; flex-direction: column; gap: 3px; color: #8b95a5; font-size: 12px; }
form.filters label.check { flex-direction: row; align-items: center; gap: 6px; padding-bottom: 7px; }
input[type=search], select { background: #0b0e12; color: #e8ecf2; border: 1px solid #2a313b; border-radius: 6px;
  padding: 6px 8px; font: 14px system-ui, sans-serif; }
input[type=search] { width: 320px; max-width: 80vw; }
button { background: #24456b; color: #f0f4fa; border: 1px solid #3b6390; border-radius: 6px; padding: 6px 16px;
  font: 14px system-ui, sans-serif; cursor: pointer; }
.dot { display: inline-block; width: 9px; height: 9px; border-radius: 50%; margin-right: 5px; }
td .snippet { color: #8b95a5; font-size: 12px; margin-top: 2px; overflow-wrap: anywhere; }
td a, dd a { color: #8fb8ff; text-decoration: none; }
td a:hover, dd a:hover { text-decoration: underline; }
nav.pager { display: flex; gap: 18px; margin-top: 12px; }
pre.content { user-select: text; font-size: 13px; line-height: 1.5; margin: 10px 0 14px; }
.meta { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 4px 0 6px; }
.topic { display: inline-block; margin-right: 6px; }
</style>
</head>
<body>
<header>
<h1><a href="./">Hearth</a></h1>
<nav class="top"><a href="./">Dashboard</a><a href="records">Records</a></nav>
`)
	w.f(`<span class="muted" id="as-of">as of %v</span>
</header>`, now)
}

// writeOptions writes a select's options.
func writeOptions(w *htmlWriter, opts []option) {
	for _, o := range opts {
		w.f(`<option value="%v"`, o.Value)
		if o.Selected {
			w.s(" selected")
		}
		w.f(">%v</option>", o.Label)
	}
}

// writeDot writes the coloured dot before a status, a state or a stance.
func writeDot(w *htmlWriter, color string) {
	w.f(`<span class="dot" style="background: %v"></span>`, cssValue(color))
}

func writeRecords(w *htmlWriter, v *browseView) {
	writeBrowseHead(w, v.Title, v.Now)
	w.f(`
<section id="filters">
<form class="filters" method="get" action="records">
<label>search<input type="search" name="q" value="%v" maxlength="1000" placeholder="words from a title or content"></label>
<label>namespace<select name="ns">`, v.F.Q)
	writeOptions(w, v.Namespaces)
	w.s(`</select></label>
<label class="check"><input type="checkbox" name="chain" value="1"`)
	if v.F.Chain {
		w.s(" checked")
	}
	w.s(`>with its scope chain</label>
<label>type<select name="type">`)
	writeOptions(w, v.Types)
	w.s(`</select></label>
<label>status<select name="status">`)
	writeOptions(w, v.Statuses)
	what := "records"
	if v.Search {
		what = "hits"
	}
	w.f(`</select></label>
<button type="submit">Show</button>
<a href="records">Clear</a>
</form>
<p class="muted small">Without a search, records are listed newest first; status “any” leaves deleted records out. A search ranks active and candidate records by relevance.</p>
</section>

<div class="tiles">
<div class="tile" id="tile-shown"><b>%v</b><span>%v on this page</span><small>%v</small></div>`, len(v.Rows), what, v.Scope)
	if v.Matching != "" {
		w.f(`
<div class="tile" id="tile-matching"><b>%v</b><span>records match</span><small>by memory_status</small></div>`, v.Matching)
	}
	w.s(`
</div>

<section id="records">
<h2>`)
	if v.Search {
		w.f("Search results for “%v”", v.F.Q)
	} else {
		w.s("Records, newest first")
	}
	w.f(` <span class="muted small">in %v</span></h2>`, v.Scope)
	switch {
	case v.Err != "":
		w.f("\n<p class=\"err\" id=\"records-error\">%v</p>", v.Err)
	case len(v.Rows) == 0:
		w.s("\n<p class=\"muted\" id=\"records-none\">No records match.</p>")
	default:
		w.s(`
<div class="scroll"><table>
<tr><th>title</th><th>type</th><th>status</th><th>namespace</th>`)
		if v.Search {
			w.s("<th>score</th>")
		} else {
			w.s("<th>created</th><th>rev</th><th>writer</th>")
		}
		w.s("</tr>")
		for _, r := range v.Rows {
			w.f(`
<tr class="rec" data-id="%v" data-type="%v" data-status="%v" data-namespace="%v">
<td class="wrap">`, r.ID, r.Type, r.Status, r.Namespace)
			writeLink(w, r.Href, r.Title)
			if r.Snippet != "" {
				w.f(`<div class="snippet">%v</div>`, r.Snippet)
			}
			w.f("</td>\n<td class=\"nw\">%v</td>\n<td class=\"nw\">", r.Type)
			writeDot(w, r.Color)
			w.f("%v</td>\n<td class=\"mono small\"><a href=\"%v\">%v</a></td>", r.Status, href(r.NSHref), r.Namespace)
			if v.Search {
				w.f("\n<td class=\"nw\">%v</td>", r.Score)
			} else {
				w.f("\n<td class=\"nw\">%v</td><td>%v</td><td class=\"nw\">%v</td>", r.Created, r.Revision, r.Writer)
			}
			w.s("\n</tr>")
		}
		w.s("\n</table></div>")
	}
	if v.Next != "" || v.First != "" {
		w.s("\n<nav class=\"pager\">")
		if v.First != "" {
			w.f(`<a href="%v" id="first">« first page</a>`, href(v.First))
		}
		if v.Next != "" {
			w.f(`<a href="%v" id="next">next page »</a>`, href(v.Next))
		}
		w.s("</nav>")
	}
	for _, n := range v.Notes {
		w.f("\n<p class=\"muted small\">%v</p>", n)
	}
	w.s("\n</section>\n</body>\n</html>\n")
}

func writeRecord(w *htmlWriter, v *recordView) {
	writeBrowseHead(w, v.Title, v.Now)
	if v.Err != "" {
		w.f(`
<section id="record">
<h2>Record <code>%v</code></h2>
<p class="err" id="record-error">%v</p>
<p><a href="records">Back to the records</a></p>
</section>
</body>
</html>
`, v.ID, v.Err)
		return
	}
	w.f("\n<section id=\"record\">\n<h2 id=\"record-title\">%v</h2>\n<div class=\"meta\">", v.Title)
	if v.Type != "" {
		w.f(`<span class="pill">%v</span>`, v.Type)
	}
	if v.Status != "" {
		w.s(`<span class="pill" id="record-status">`)
		writeDot(w, v.Color)
		w.f("%v</span>", v.Status)
	}
	if v.Namespace != "" {
		w.f(`<a class="mono small" href="%v">%v</a>`, href(v.NSHref), v.Namespace)
	}
	w.f("\n<code class=\"small muted\">%v</code>\n</div>", v.ID)
	if v.Purged {
		w.s("\n<p class=\"muted\" id=\"record-purged\">This record was forgotten and then purged; its audit rows remain.</p>")
	} else {
		w.f(`
<pre class="content" id="record-content">%v</pre>
<dl>
<dt>writer</dt><dd>%v</dd>
<dt>source</dt><dd>%v</dd>
<dt>created</dt><dd>%v</dd>
<dt>updated</dt><dd>%v</dd>`, v.Content, v.Writer, v.Source, v.Created, v.Updated)
		if len(v.Topics) > 0 {
			w.s("<dt>topics</dt><dd>")
			for _, t := range v.Topics {
				w.f(`<span class="pill topic">%v</span>`, t)
			}
			w.s("</dd>")
		}
		writeSupersession(w, "supersedes", v.Supersedes, v.SupersedesTitle, v.SupersedesHref)
		writeSupersession(w, "superseded by", v.SupersededBy, v.SupersededByTitle, v.SupersededByHref)
		w.s("\n</dl>")
	}
	w.s("\n</section>")
	if len(v.Tiles) > 0 {
		w.s("\n<div class=\"tiles\">")
		writeTiles(w, v.Tiles)
		w.s("\n</div>")
	}
	if !v.Purged {
		w.s(`
<div class="grid">
<section id="anchors">
<h2>Anchors</h2>`)
		if len(v.Anchors) == 0 {
			w.s("\n<p class=\"muted\">No anchors: the record depends on nothing that can disappear.</p>")
		} else {
			w.s("\n<table>\n<tr><th>anchor</th><th>state</th><th>checked</th></tr>")
			for _, a := range v.Anchors {
				w.f(`
<tr class="anchor"><td class="mono wrap">%v</td><td class="nw">`, a.Anchor)
				writeDot(w, a.Color)
				w.f(`%v</td><td class="nw">%v</td></tr>`, a.State, a.Checked)
			}
			w.s("\n</table>")
		}
		w.s(`
</section>
<section id="evidence">
<h2>Evidence</h2>`)
		if len(v.Evidence) == 0 {
			w.s("\n<p class=\"muted\">No client has corroborated or contradicted it.</p>")
		} else {
			w.s("\n<table>\n<tr><th>client</th><th>stance</th><th>note</th><th>at</th></tr>")
			for _, e := range v.Evidence {
				w.f(`
<tr class="stance"><td class="nw">%v</td><td class="nw">`, e.Client)
				writeDot(w, e.Color)
				w.f(`%v</td><td class="wrap">%v</td><td class="nw">%v</td></tr>`, e.Stance, e.Note, e.At)
			}
			w.s("\n</table>")
		}
		w.s("\n</section>\n</div>")
	}
	w.s(`

<section id="history">
<h2>Revision history <span class="muted small">newest first</span></h2>`)
	if c := &v.Chart; len(c.Points) > 0 {
		w.f(`
<svg viewBox="0 0 %v %v" role="img" aria-label="Revision over time" data-max="%v">
<line x1="40" y1="90.5" x2="%v" y2="90.5"/>`, c.Width, c.Height, c.Max, c.ToX)
		if c.Max > 1 {
			w.f("\n<text class=\"dim\" x=\"30\" y=\"15\" text-anchor=\"end\">r%v</text>", c.Max)
		}
		w.f(`
<text class="dim" x="30" y="95" text-anchor="end">r1</text>
<polyline points="%v" fill="none" stroke="#5b6b80" stroke-width="2"/>`, c.Line)
		for _, p := range c.Points {
			w.f(`
<circle cx="%v" cy="%v" r="6" fill="%v" data-revision="%v"><title>%v</title></circle>`, p.X, p.Y, p.Color, p.Revision, p.Title)
		}
		w.f(`
<text class="dim" x="40" y="110">%v</text>
<text class="dim" x="%v" y="110" text-anchor="end">%v</text>`, c.From, c.ToX, c.To)
		writeLegend(w, c.Legend, c.LegendY, "5")
		w.s("\n</svg>")
	}
	if len(v.Entries) == 0 {
		w.s("\n<p class=\"muted\">No audit rows.</p>")
	} else {
		w.s(`
<div class="scroll"><table>
<tr><th>at</th><th>client</th><th>action</th><th>revision</th><th>detail</th></tr>`)
		for _, e := range v.Entries {
			w.f(`
<tr class="entry"><td class="nw">%v</td><td class="nw">%v</td><td class="nw">`, e.At, e.Client)
			writeDot(w, e.Color)
			w.f(`%v</td><td>%v</td><td class="wrap">%v</td></tr>`, e.Action, e.Revision, e.Detail)
		}
		w.s("\n</table></div>")
	}
	if v.EntriesNote != "" {
		w.f(`<p class="muted small" id="entries-note">%v</p>`, v.EntriesNote)
	}
	w.s("\n</section>\n</body>\n</html>\n")
}

// writeSupersession writes a record's supersedes or superseded by line:
// the linked record's title when it could be read, then its id; the link
// goes on the title, else on the id.
func writeSupersession(w *htmlWriter, label, id, title, target string) {
	if id == "" {
		return
	}
	w.f("<dt>%v</dt><dd>", label)
	if title != "" {
		writeLink(w, target, title)
		w.s(" ")
	}
	w.s(`<span class="mono`)
	if title != "" {
		w.s(" small muted")
	}
	w.s(`">`)
	if title == "" {
		writeLink(w, target, id)
	} else {
		w.f("%v", id)
	}
	w.s("</span></dd>")
}
