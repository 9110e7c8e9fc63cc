package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// defaultURL is where the CLI, the hooks and `hearth connect` find a
// server when not told (no --url, no HEARTH_URL): serve's default listen
// address.
const defaultURL = "http://127.0.0.1:8765"

// apiClient calls the REST API (POST /api/<tool>) as one client, with the
// token it read from a file. The token is never printed.
type apiClient struct {
	base  string
	token string
	http  *http.Client
}

// serverFlags are the flags of every subcommand that talks to a server:
// its base URL and the CA that signs its certificate.
type serverFlags struct {
	url, caFile *string
}

func addServerFlags(fs *flag.FlagSet) serverFlags {
	return serverFlags{
		url: fs.String("url", "", "the server's base URL, http:// or https:// (default $HEARTH_URL, else "+defaultURL+")"),
		caFile: fs.String("ca-file", "", "a PEM file of the CA certificates to trust for an https URL, "+
			"beside the system's (default $HEARTH_CA_FILE)"),
	}
}

// resolve returns the base URL (url, else HEARTH_URL, else defaultURL;
// checked by baseURL) and an HTTP client that trusts --ca-file (else
// HEARTH_CA_FILE) beside the system's CAs.
func (f serverFlags) resolve(url string) (string, *http.Client, error) {
	if url == "" {
		url = envOr("HEARTH_URL", defaultURL)
	}
	base, err := baseURL(url)
	if err != nil {
		return "", nil, err
	}
	tr, err := caTransport(envOr("HEARTH_CA_FILE", ""), *f.caFile)
	if err != nil {
		return "", nil, err
	}
	return base, &http.Client{Transport: tr}, nil
}

// caTransport is the default transport, trusting the CA certificates in
// file (flag, else env) beside the system's; the default transport itself
// when neither names one.
func caTransport(env, flagValue string) (http.RoundTripper, error) {
	file := flagValue
	if file == "" {
		file = env
	}
	if file == "" {
		return http.DefaultTransport, nil
	}
	pool, err := caPool(file)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return tr, nil
}

// caPool is the system's CA certificates plus those in the PEM file.
func caPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("CA file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("CA file %s holds no PEM certificate", file)
	}
	return pool, nil
}

// apiFlags are the flags of every subcommand that calls tools as a client.
type apiFlags struct {
	serverFlags
	tokenFile *string
}

func addAPIFlags(fs *flag.FlagSet, need string) apiFlags {
	return apiFlags{
		serverFlags: addServerFlags(fs),
		tokenFile:   fs.String("token-file", "", "a file holding the token of a client with "+need+" scope (e.g. DIR/tokens/<client> on the server)"),
	}
}

// callTimeout bounds one call of the CLI: long enough for a backup of a
// large store; the server bounds the rest.
const callTimeout = 30 * time.Minute

// client is a client of the server at --url, as the client whose token
// --token-file holds.
func (f apiFlags) client() (*apiClient, error) {
	if *f.tokenFile == "" {
		return nil, errors.New("--token-file is required")
	}
	tok, _, err := readToken(*f.tokenFile, os.Getenv)
	if err != nil {
		return nil, err
	}
	base, hc, err := f.resolve(*f.url)
	if err != nil {
		return nil, err
	}
	hc.Timeout = callTimeout
	return &apiClient{base: base, token: tok, http: hc}, nil
}

// localClient is a client of the server holding the data directory data,
// over its admin socket, as the local admin: no token (adminsock.go,
// docs/operations.md).
func localClient(data string) (*apiClient, error) {
	path := filepath.Join(data, AdminSocket)
	if fi, err := os.Stat(path); err != nil || fi.Mode().Type() != fs.ModeSocket {
		return nil, fmt.Errorf("no admin socket %s: is a server of %s running? (its log says why it has none)", path, data)
	}
	var dialer net.Dialer
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return dialer.DialContext(ctx, "unix", path)
	}}
	return &apiClient{base: "http://localhost", http: &http.Client{Transport: tr, Timeout: callTimeout}}, nil
}

// clientFor is the client of a command that takes --data and the server
// flags: with --token-file, the server at --url as that token's client;
// without, given --data (data), the server holding it over its admin
// socket. code is the exit status when err is not nil: 2 for bad flags, 1
// when there is no admin socket.
func (f apiFlags) clientFor(data string) (c *apiClient, code int, err error) {
	if *f.tokenFile == "" && data != "" {
		c, err = localClient(data)
		return c, 1, err
	}
	if *f.tokenFile == "" {
		return nil, 2, errors.New("--data DIR (on the server's machine) or --token-file FILE is required")
	}
	c, err = f.client()
	return c, 2, err
}

// connect returns the client of command s (clientFor), or says on stderr
// why there is none and returns the exit status.
func (f apiFlags) connect(s spec, data string, stderr io.Writer) (*apiClient, int) {
	c, code, err := f.clientFor(data)
	switch {
	case err == nil:
		return c, 0
	case code == 2:
		return nil, s.fail(stderr, "%v", err)
	}
	fmt.Fprintf(stderr, "hearth %s: %v\n", s.name, err)
	return nil, code
}

// addDataFlag adds --data, for commands that need a server: on the
// server's machine, the server running on DIR is asked over DIR's admin
// socket.
func addDataFlag(fs *flag.FlagSet) *string {
	return fs.String("data", "", "the data directory of a server running on this machine: ask it over DIR's admin socket, with no token")
}

// ask calls tool on the server for subcommand cmd ("hearth backup") and
// decodes the reply into resp. It prints why it failed and returns the
// exit status: 0 when the call succeeded, 2 for bad flags, 1 otherwise.
// Without --token-file it asks the server holding data over its admin
// socket; heldErr, when not nil, is why the subcommand could not work on
// the data directory itself (that server holds it).
func (f apiFlags) ask(ctx context.Context, stderr io.Writer, cmd, data string, heldErr error, tool string, req any, resp proto.Message) int {
	c, code, err := f.clientFor(data)
	if err != nil && heldErr != nil {
		fmt.Fprintf(stderr, "%s: a server holds %s (%v), and %v;\nask it with --token-file FILE (a client with admin scope) and --url (or HEARTH_URL) if it does not listen on %s\n", cmd, data, heldErr, err, defaultURL)
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return code
	}
	if err := c.call(ctx, tool, req, resp); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return 1
	}
	return 0
}

// apiError is a refused call, as the error body says.
type apiError struct {
	Tool, Code, Field, Message string
	Status                     int
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s: %s (%s, HTTP %d)", e.Tool, e.Message, e.Code, e.Status)
}

// call posts req (JSON) to tool and decodes the reply into resp.
func (c *apiClient) call(ctx context.Context, tool string, req any, resp proto.Message) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	raw, err := c.do(ctx, http.MethodPost, "/api/"+tool, tool, bytes.NewReader(body))
	if err != nil {
		return err
	}
	return protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(raw, resp)
}

// do sends one request to path (what names it in errors) and returns
// the body of a 200 reply; any other is an *apiError, from the error body.
func (c *apiClient) do(ctx context.Context, method, path, what string, body io.Reader) ([]byte, error) {
	r, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		r.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.http.Do(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if res.StatusCode != http.StatusOK {
		var e struct {
			Error struct {
				Code, Field, Message string
			} `json:"error"`
		}
		if json.Unmarshal(raw, &e) != nil || e.Error.Code == "" {
			return nil, &apiError{Tool: what, Code: "UNKNOWN", Message: http.StatusText(res.StatusCode), Status: res.StatusCode}
		}
		return nil, &apiError{Tool: what, Code: e.Error.Code, Field: e.Error.Field, Message: e.Error.Message, Status: res.StatusCode}
	}
	return raw, nil
}
