// Package page is Hearth's dashboard, served on the ingress listener only
// (docs/design.md §16, R-P): status tiles, records by type and status, namespaces,
// audit rows per hour, model servers and encoder, the nightly review and
// anchor sweep, unused records, the latest audit rows, and each client with
// the ready commands to connect Claude Code and Codex.
//
// The page is a client of the gRPC services, over the daemon's in-process
// channel, as a built-in client (ClientName) whose token lives in memory
// only: it reads exactly what memory_status, memory_audit and memory_unused
// report, through the same interceptor, and has no query path of its own.
// Clients, their tokens and the encoder are configuration, handed in by the
// daemon (model servers come live from memory_status); generated tokens are
// read from the tokens directory on every view.
//
// Beside the dashboard, a record browser (browse.go) lists, filters and
// searches records and shows one with its history, through memory_timeline,
// memory_search and memory_history.
//
// Every view is one server-rendered HTML document: charts are inline SVG,
// styles inline, links relative (never a leading '/', so it works under the
// ingress path), no script, no external asset, and no form but the search
// box, which submits with GET. Guard keeps every source but the
// Supervisor's ingress proxy and loopback out.
package page

import (
	"context"
	_ "embed"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hearth-memory/hearth/gateway"
	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ClientName is the built-in client the page calls the services as. Client
// names in options are lower-case letters, digits, '.', '_' and '-', so no
// configured client can take this name.
const ClientName = "hearth:page"

// auditLimit is how many audit rows the page reads: memory_audit's maximum.
const auditLimit = 500

// latestAuditRows is how many audit rows the table shows.
const latestAuditRows = 25

// unusedLimit is how many unused records the page lists.
const unusedLimit = 20

// Client is one configured client, as the page shows it.
type Client struct {
	Name   string
	Scopes []string
	// IP is the address of an address client; the zero Addr for none.
	IP netip.Addr
	// Supplied is set when the admin supplied the token's SHA-256
	// (token_sha256); otherwise a token client's token was generated and
	// sits in the tokens directory.
	Supplied bool
}

// Config is what the page needs. Nothing in it is read from the store.
type Config struct {
	// Conn reaches the gRPC services; Token authenticates the page as
	// ClientName (scopes read and admin).
	Conn  grpc.ClientConnInterface
	Token string
	// API is the address the API listener (MCP, REST, gRPC) is bound to.
	API netip.AddrPort
	// Clients are the configured clients; generated tokens are read from
	// TokensDir/<name>.
	Clients   []Client
	TokensDir string
	// The encoder, as configured ("" when unset). Model servers are read
	// from memory_status.
	EmbedURL, EmbedModel string
	// Database is the PostgreSQL database the records are in, as the
	// page shows it (its password already redacted); "" for the SQLite
	// file memory_status names (docs/operations.md, "PostgreSQL").
	Database string
	// ReviewAt is the nightly review's local time ("HH:MM") or "off";
	// AnchorSweepHours the sweep interval.
	ReviewAt         string
	AnchorSweepHours int
	// Now is the clock (nil: time.Now); Interfaces lists the addresses a
	// plain binary may be reached on (nil: InterfaceAddrs).
	Now        func() time.Time
	Interfaces func() []net.Addr
	Log        *slog.Logger
	// ShowTokens says which peers see generated tokens in the page (nil:
	// only the Supervisor's ingress proxy, i.e. the Home Assistant admin).
	// Everyone else the guard lets in (loopback, in development) gets
	// commands that read the token from its 0600 file instead, so another
	// local user cannot lift it from the page.
	ShowTokens func(peer netip.Addr) bool
}

// Handler renders the page. Serve it behind Guard.
type Handler struct {
	cfg   Config
	admin hearthv1.AdminServiceClient
}

var _ http.Handler = (*Handler)(nil)

// New returns the page handler.
func New(cfg Config) *Handler {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Interfaces == nil {
		cfg.Interfaces = InterfaceAddrs
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Handler{cfg: cfg, admin: hearthv1.NewAdminServiceClient(cfg.Conn)}
}

// ServeHTTP renders the page from the services' answers. A failing call
// shows its error in its section; the rest of the page still renders.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == recordsPath || r.URL.Path == recordPath {
		h.serveBrowser(w, r)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	ctx = gateway.WithBearer(ctx, h.cfg.Token)
	peer := peerAddr(r.RemoteAddr)
	show := peer == IngressProxy
	if h.cfg.ShowTokens != nil {
		show = h.cfg.ShowTokens(peer)
	}
	v := h.build(ctx, peer == IngressProxy, show, r.Header.Get("X-Forwarded-Host"))
	var buf htmlWriter
	writePage(&buf, v)
	setHeaders(w.Header())
	w.Write(buf.Bytes())
}

// view is everything the page shows.
type view struct {
	Now     string
	Version string

	Tiles []tile

	StatusErr  string
	Types      typeChart
	Namespaces nsChart
	NSCount    int

	AuditErr string
	Hours    hourChart
	HoursLen int
	Audit    []auditRow

	Models  modelsView
	Encoder modelLine
	Vectors vectorsView

	Review, Sweep jobLine
	Anchors       anchorsView

	Unused unusedView

	// Questions is the questions panel, rendered by questions.go.
	Questions markup

	Store storeView

	Endpoint endpoint
	ViaProxy bool
	Clients  []clientView
}

type tile struct {
	Key, Label, Value, Note string
}

type auditRow struct {
	At, Client, Action, Namespace, RecordID, Detail string
	Href                                            string // the record view
}

type modelLine struct {
	Role, URL, Kind, Model, State string
}

type jobLine struct {
	State, Detail, Schedule string
}

type unusedView struct {
	State   string // "not ready", "none", or "" when Records lists some
	Detail  string
	Records []unusedRow
}

type unusedRow struct {
	ID, Namespace, Type, Title, Created, LastReturned string
	Href                                              string // the record view
}

type clientView struct {
	Name      string
	Scopes    string
	Kind      string
	Token     string
	TokenNote string        // where the token is, when the page does not show it
	TokenErr  string        // why there is no token to show
	Save      string        // the command that keeps the token in a file
	Connects  []connectView // the harnesses this client is for
	Rotate    string
	RotateCmd string
}

// connectView is one harness's `hearth connect` command on a client's card.
type connectView struct {
	Step  string // "2. " after the token's step, else ""
	Label string // the harness as its users name it
	What  string // what the command writes
	Cmd   string // hearth connect <harness> … --apply
	Env   string // export HEARTH_TOKEN=…, where the harness's MCP entry reads it
}

// harnesses are those `hearth connect` knows (docs/claude-code.md,
// docs/codex.md, docs/copilot.md, docs/gemini-cli.md, docs/opencode.md),
// each a default client of its own name. env marks a harness whose MCP
// entry reads the token from HEARTH_TOKEN where it starts.
var harnesses = []struct {
	name, label, what string
	env               bool
}{
	{"claude-code", "Claude Code", "the MCP server and the hooks", false},
	{"codex", "Codex", "the MCP server and the hooks", true},
	{"copilot", "GitHub Copilot CLI", "the MCP server and the hooks", true},
	{"gemini-cli", "Gemini CLI", "the MCP server and the hooks", true},
	{"opencode", "OpenCode", "the MCP server and Hearth's plugin", false},
}

const timeLayout = "2006-01-02 15:04 MST"

func (h *Handler) build(ctx context.Context, viaProxy, showTokens bool, forwardedHost string) *view {
	now := h.cfg.Now()
	v := &view{Now: now.Format(timeLayout), HoursLen: chartHours, ViaProxy: viaProxy}

	st, err := h.admin.Status(ctx, &hearthv1.StatusRequest{})
	v.Models = newModelsView(st, err, now.Location())
	records, candidates, namespaces := "?", "?", "?"
	if err != nil {
		v.StatusErr = callError("memory_status", err)
	} else {
		v.Version = st.GetVersion()
		v.Types = newTypeChart(st.GetCounts())
		v.Namespaces = newNSChart(st.GetNamespaces())
		v.NSCount = len(st.GetNamespaces())
		var cand uint32
		for _, c := range st.GetCounts() {
			if c.GetStatus() == "candidate" {
				cand += c.GetCount()
			}
		}
		records, candidates, namespaces = itoa(st.GetRecords()), itoa(cand), itoa(v.NSCount)
		v.Store = newStoreView(st.GetStore(), now.Location(), h.cfg.Database)
	}

	audit, err := h.admin.Audit(ctx, &hearthv1.AuditRequest{Limit: auditLimit})
	var rows []*hearthv1.AuditEntry
	auditOK, complete := err == nil, false
	if err != nil {
		v.AuditErr = callError("memory_audit", err)
	} else {
		rows = audit.GetEntries()
		complete = len(rows) < auditLimit
		v.Hours = newHourChart(rows, now, complete)
		for i, e := range rows {
			if i == latestAuditRows {
				break
			}
			v.Audit = append(v.Audit, auditRow{
				At: e.GetAt().AsTime().In(now.Location()).Format(timeLayout), Client: e.GetClient(),
				Action: e.GetAction(), Namespace: e.GetNamespace(), RecordID: e.GetRecordId(), Detail: e.GetDetail(),
				Href: recordHref(e.GetRecordId()),
			})
		}
	}

	v.Encoder = h.encoder()
	if v.Vectors = newVectorsView(st.GetEncoder(), now.Location()); v.Vectors.Shown {
		v.Encoder.State = v.Vectors.State
	}
	v.Review = h.review(rows, auditOK, complete, now.Location())
	v.Sweep, v.Anchors = h.anchors(st, v.StatusErr, now.Location())
	v.Unused = h.unused(ctx, now.Location())
	v.Questions = h.questions(ctx)

	v.Endpoint = agentEndpoint(h.cfg.API, viaProxy, forwardedHost, h.cfg.Interfaces())
	for _, c := range h.cfg.Clients {
		v.Clients = append(v.Clients, h.client(c, v.Endpoint, showTokens))
	}

	modelsTile, modelsNote := v.Models.tile()
	encoderTile := "off"
	if h.cfg.EmbedURL != "" {
		encoderTile = "on"
	}
	version := v.Version
	if version == "" {
		version = "?"
	}
	v.Tiles = []tile{
		{Key: "records", Label: "records", Value: records, Note: "not deleted"},
		{Key: "candidates", Label: "candidates", Value: candidates, Note: "awaiting review"},
		{Key: "namespaces", Label: "namespaces", Value: namespaces, Note: "holding records"},
		{Key: "clients", Label: "clients", Value: itoa(len(h.cfg.Clients)), Note: "configured"},
		{Key: "models", Label: "model servers", Value: modelsTile, Note: modelsNote},
		{Key: "encoder", Label: "encoder", Value: encoderTile, Note: encoderNote(h.cfg.EmbedURL)},
		{Key: "version", Label: "version", Value: version, Note: "hearth"},
	}
	return v
}

func encoderNote(url string) string {
	if url == "" {
		return "full-text search only"
	}
	return "configured"
}

// callError describes a failed call for the page: the tool and the gRPC
// code and message (our messages carry no secrets).
func callError(tool string, err error) string {
	st := status.Convert(err)
	return tool + " failed: " + st.Code().String() + ": " + st.Message()
}

func itoa[T ~int | ~uint32](n T) string { return strconv.FormatInt(int64(n), 10) }

// encoder describes the configured encoder. No encoder client exists yet,
// so a configured one is shown as configured and not probed.
func (h *Handler) encoder() modelLine {
	if h.cfg.EmbedURL == "" {
		return modelLine{Role: "embed_url", State: "not configured: search is full text only"}
	}
	return modelLine{Role: "embed_url", URL: h.cfg.EmbedURL, Kind: serverKind(h.cfg.EmbedURL), Model: h.cfg.EmbedModel,
		State: "configured, not probed (no encoder client in this version)"}
}

// serverKind tells the two wire formats apart, as docs/design.md R-M2 does.
func serverKind(url string) string {
	if strings.HasSuffix(url, "/v1") {
		return "OpenAI-style"
	}
	return "Ollama"
}

// maintenanceAction is the audit action the nightly maintenance writes when
// it runs; its detail carries the counts.
const maintenanceAction = "maintenance"

// review reports the nightly maintenance from the newest "maintenance"
// audit row. Without one, it has never run only if every audit row was read.
func (h *Handler) review(rows []*hearthv1.AuditEntry, ok, complete bool, loc *time.Location) jobLine {
	j := jobLine{Schedule: "daily at " + h.cfg.ReviewAt + " (local time)"}
	if h.cfg.ReviewAt == "off" || h.cfg.ReviewAt == "" {
		j.Schedule = "off (review_at)"
	}
	if !ok {
		j.State = "unknown"
		j.Detail = "The audit log could not be read."
		return j
	}
	for _, e := range rows {
		if e.GetAction() == maintenanceAction {
			j.State = "last run " + e.GetAt().AsTime().In(loc).Format(timeLayout)
			j.Detail = e.GetDetail()
			return j
		}
	}
	if complete {
		j.State = "never run"
		return j
	}
	j.State = "not among the latest " + itoa(auditLimit) + " audit rows"
	return j
}

// unused lists unused records, or says why there are none to show.
func (h *Handler) unused(ctx context.Context, loc *time.Location) unusedView {
	resp, err := h.admin.Unused(ctx, &hearthv1.UnusedRequest{Limit: unusedLimit})
	switch {
	case status.Code(err) == codes.Unimplemented:
		return unusedView{State: "not ready", Detail: "memory_unused is not available in this version."}
	case err != nil:
		return unusedView{State: "not ready", Detail: callError("memory_unused", err)}
	case !resp.GetReady():
		d := "Usage counting has not run for 30 days yet."
		if resp.GetCountingSince() != nil {
			since := resp.GetCountingSince().AsTime().In(loc)
			d = "Usage counted since " + since.Format(timeLayout) + "; the list is ready on " +
				since.Add(30*24*time.Hour).Format("2006-01-02") + "."
		}
		return unusedView{State: "not ready", Detail: d}
	case len(resp.GetRecords()) == 0:
		return unusedView{State: "none", Detail: "Every active record older than 30 days was returned in the last 30 days."}
	}
	var u unusedView
	for _, r := range resp.GetRecords() {
		row := unusedRow{ID: r.GetId(), Href: recordHref(r.GetId()), Namespace: r.GetNamespace(), Type: r.GetType(), Title: r.GetTitle(),
			Created: r.GetCreatedAt().AsTime().In(loc).Format("2006-01-02"), LastReturned: "never"}
		if r.GetLastReturnedAt() != nil {
			row.LastReturned = r.GetLastReturnedAt().AsTime().In(loc).Format("2006-01-02")
		}
		u.Records = append(u.Records, row)
	}
	if resp.GetTruncated() || resp.GetLeftOut() > 0 {
		u.Detail = itoa(resp.GetLeftOut()) + " more not shown."
	}
	return u
}

// rotateCommands are the two ways to rotate a generated token: the CLI on
// the data directory, and memory_token_rotate over REST.
func rotateCommands(name, dataDir string, ep endpoint) string {
	base := strings.TrimSuffix(ep.URL(), "/mcp")
	return "hearth token rotate --client " + name + " --data " + dataDir + "\n\n" +
		"curl -s " + base + "/api/memory_token_rotate -H \"Authorization: Bearer $ADMIN_TOKEN\" \\\n" +
		"  -H 'Content-Type: application/json' -d '{\"client\":\"" + name + "\"}'"
}

// client describes how to connect one client: its token (read from the
// tokens directory when generated, and shown only when showToken), the
// step that keeps it in a file of its own, and the hearth connect command
// for each harness the client is for (README.md's recommended path).
func (h *Handler) client(c Client, ep endpoint, showToken bool) clientView {
	cv := clientView{Name: c.Name, Scopes: strings.Join(c.Scopes, ", ")}
	base := strings.TrimSuffix(ep.URL(), "/mcp")
	file := "~/.config/hearth/" + c.Name + ".token"
	switch {
	case c.Supplied:
		cv.Kind = "token supplied by you (token_sha256)"
		cv.Save = "mkdir -p ~/.config/hearth && (umask 077; cat > " + file + ")   # paste your token, then Ctrl-D"
		cv.Rotate = "To change it, set a new token_sha256 for " + c.Name + " in the configuration and restart."
	case c.IP.IsValid():
		cv.Kind = "by address " + c.IP.String() + ", read only"
		file = "" // no token
		cv.Rotate = "Change or remove its ip in the configuration and restart."
	default:
		cv.Kind = "token generated by Hearth"
		path := filepath.Join(h.cfg.TokensDir, c.Name)
		b, err := os.ReadFile(path)
		switch t := strings.TrimSpace(string(b)); {
		case err == nil && t != "" && showToken:
			cv.Token = t
			cv.Save = "mkdir -p ~/.config/hearth && (umask 077; cat > " + file + ")   # paste the token above, then Ctrl-D"
		case err == nil && t != "":
			cv.TokenNote = "This page shows no token to a browser on this machine; copy it from its file instead:"
			cv.Save = "mkdir -p ~/.config/hearth && install -m 600 " + path + " " + file
		default:
			cv.TokenErr = "The token file tokens/" + c.Name + " in the data directory is missing or unreadable."
		}
		cv.Rotate = "Rotate it when it may have leaked: the old token is refused at once and this page shows the new one. " +
			"Run the first command where Hearth runs (it works with the server stopped too), or the second with an admin client's token:"
		cv.RotateCmd = rotateCommands(c.Name, filepath.Dir(h.cfg.TokensDir), ep)
	}
	if c.IP.IsValid() && c.Supplied {
		cv.Kind += "; also by address " + c.IP.String() + ", read only"
	}
	// A client named for a harness is for that harness alone: each harness
	// its own identity. Any other client is shown every harness's command.
	named := false
	for _, hn := range harnesses {
		named = named || c.Name == hn.name
	}
	for _, hn := range harnesses {
		if named && c.Name != hn.name {
			continue
		}
		cmd := "hearth connect " + hn.name + " --url " + base
		if file != "" {
			cmd += " --token-file " + file
		}
		cc := connectView{Label: hn.label, What: hn.what, Cmd: cmd + " --apply"}
		if cv.Save != "" {
			cc.Step = "2. "
		}
		if hn.env && file != "" {
			cc.Env = "export HEARTH_TOKEN=\"$(cat " + file + ")\""
		}
		cv.Connects = append(cv.Connects, cc)
	}
	return cv
}
