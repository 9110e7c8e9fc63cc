package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/auth"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/storage"
	"google.golang.org/grpc/codes"
)

// Tokens lists the configured clients and how each is identified
// (memory_tokens, admin scope). It never reads a token file.
func (a *adminService) Tokens(ctx context.Context, _ *hearthv1.TokensRequest) (*hearthv1.TokensResponse, error) {
	stored, err := a.db.ClientTokens(ctx)
	if err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	updated := map[string]storage.ClientToken{}
	for _, t := range stored {
		updated[t.Client] = t
	}
	resp := &hearthv1.TokensResponse{}
	for _, c := range a.opts.Clients {
		ci := &hearthv1.ClientIdentity{Client: c.Name, Kind: string(c.Kind())}
		for _, s := range c.Scopes {
			ci.Scopes = append(ci.Scopes, string(s))
		}
		if c.IP.IsValid() {
			ci.Ip = c.IP.String()
		}
		if c.Kind() == options.KindGenerated {
			ci.TokenPath = filepath.Join(a.ops.tokensDir, c.Name)
			if t, ok := updated[c.Name]; ok {
				ci.UpdatedAt = ts(t.UpdatedAt)
			}
		}
		resp.Clients = append(resp.Clients, ci)
	}
	return resp, nil
}

// useInterceptor makes in the interceptor token rotation updates, and has
// it read the generated tokens' digests from the store on every call with
// a token, so that a rotation through another front end on the same
// database counts here from the next call (docs/operations.md, "Tokens").
func (s *Server) useInterceptor(in *auth.Interceptor) {
	s.ops.in = in
	in.ReadStored(s.storedTokens)
}

// storedTokens returns the generated tokens' digests as the store holds
// them now, for the interceptor. A failure to read them is the call's
// answer, mapped as any store error is.
func (s *Server) storedTokens(ctx context.Context) (map[string][]byte, error) {
	list, err := s.db.ClientTokens(ctx)
	if err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	sums := make(map[string][]byte, len(list))
	for _, t := range list {
		// Stored as 64 lower-case hex digits (storage.StoreClientToken
		// refuses anything else), so this does not fail.
		sum, err := hex.DecodeString(t.SHA256)
		if err != nil {
			return nil, toStatus(ctx, s.log, err)
		}
		sums[t.Client] = sum
	}
	return sums, nil
}

// checkRotateTokenRequest validates a memory_token_rotate request.
func checkRotateTokenRequest(r *hearthv1.RotateTokenRequest) error {
	switch {
	case r.GetClient() == "":
		return invalid("client", "is required")
	case !options.ValidClientName(r.GetClient()):
		return invalid("client", "must be a client name: 1 to 64 of a-z, 0-9, '.', '_' and '-'")
	}
	return nil
}

// RotateToken replaces a client's generated token (memory_token_rotate,
// admin scope): a new token is written to the client's file, its digest
// stored with an audit row "token.rotate", and the interceptor's table
// updated, so that the old token is refused from the moment this returns,
// over every transport, and by every front end on the same database from
// its next call (its interceptor reads the stored digest, useInterceptor). Returns NOT_FOUND (field client) for a client not
// configured, FAILED_PRECONDITION (field client) for one whose token is
// supplied or that is identified by address.
func (a *adminService) RotateToken(ctx context.Context, r *hearthv1.RotateTokenRequest) (*hearthv1.RotateTokenResponse, error) {
	if err := checkRotateTokenRequest(r); err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	name := r.GetClient()
	a.ops.rotate.Lock()
	defer a.ops.rotate.Unlock()
	path, sum, err := RotateGeneratedToken(ctx, a.db, a.opts.Clients, a.ops.tokensDir, name, client(ctx))
	if err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	if a.ops.in != nil {
		a.ops.in.SetToken(name, sum)
	}
	a.log.InfoContext(ctx, "token rotated", "client", name, "by", client(ctx), "file", path)
	return &hearthv1.RotateTokenResponse{Client: name, TokenPath: path, RotatedAt: ts(a.db.Now())}, nil
}

// RotateGeneratedToken replaces the generated token of the configured
// client name: a new token in dir/<name> (0600, replaced atomically) and
// its digest stored with an audit row "token.rotate" by by. It returns the
// file and the new digest; the caller updates a running interceptor. Its
// errors are gRPC status errors: NOT_FOUND (field client) for a client not
// configured, FAILED_PRECONDITION (field client) for one whose token is
// supplied or that is identified by address.
func RotateGeneratedToken(ctx context.Context, db *storage.DB, clients []options.Client, dir, name, by string) (string, []byte, error) {
	var conf *options.Client
	for i := range clients {
		if clients[i].Name == name {
			conf = &clients[i]
		}
	}
	switch {
	case conf == nil:
		return "", nil, withDetail(codes.NotFound, "client: no configured client has this name", &hearthv1.ErrorDetail{Field: "client"})
	case conf.Kind() == options.KindSupplied:
		return "", nil, withDetail(codes.FailedPrecondition, "client: its token is supplied (token_sha256): set a new hash in the configuration and restart",
			&hearthv1.ErrorDetail{Field: "client"})
	case conf.Kind() == options.KindAddress:
		return "", nil, withDetail(codes.FailedPrecondition, "client: it is identified by its address and has no token", &hearthv1.ErrorDetail{Field: "client"})
	case dir == "":
		return "", nil, withDetail(codes.FailedPrecondition, "this server has no tokens folder", &hearthv1.ErrorDetail{})
	}
	path := filepath.Join(dir, name)
	sum, err := rotateToken(ctx, db, name, path, by)
	if err != nil {
		return "", nil, err
	}
	return path, sum, nil
}

// rotateToken writes a new token to path and stores its digest, audited
// as by's rotation. When the store refuses, the old file comes back, so the
// file and the stored digest never disagree.
func rotateToken(ctx context.Context, db *storage.DB, name, path, by string) ([]byte, error) {
	token, err := NewToken()
	if err != nil {
		return nil, err
	}
	old, readErr := os.ReadFile(path)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	if err := writeTokenFile(path, token); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(token))
	if err := db.StoreClientToken(ctx, name, hex.EncodeToString(sum[:]), storage.ActionTokenRotate, by, ""); err != nil {
		if readErr == nil {
			writeTokenFile(path, string(trimNewline(old)))
		}
		return nil, err
	}
	return sum[:], nil
}

func trimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
