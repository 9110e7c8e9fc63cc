package main

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/hearth-memory/hearth/server"
	"github.com/hearth-memory/hearth/server/auth"
	"github.com/hearth-memory/hearth/server/options"
)

// The local admin (docs/operations.md, "Local admin"): whoever can read the
// data directory is its admin. The server listens on a Unix socket inside
// the data directory, mode 0600, and serves on it what it serves on its
// port over HTTP/1.1 (REST, metrics, health), every request as the
// built-in client LocalAdminName with every scope. The CLI's --data
// commands call the server there, with no token.
//
// The identity travels as a bearer token that exists only in this
// process's memory (as the page's does): the socket's handler replaces
// whatever Authorization a request brought with it, so the one
// interceptor decides, audits and logs it as for any client, and a
// request that did not arrive over the socket cannot carry it.

// AdminSocket is the admin socket's file name in the data directory.
const AdminSocket = "admin.sock"

// LocalAdminName is the built-in client of calls over the admin socket.
// Client names in options are lower-case letters, digits, '.', '_' and
// '-', so no configured client can take it.
const LocalAdminName = "hearth:local-admin"

// maxSocketPath is the longest path a Unix socket may have on Linux
// (sun_path's 108 bytes, one for the terminating NUL).
const maxSocketPath = 107

// localAdminClient returns the built-in client of the admin socket and the
// token it is known by, made afresh for this process.
func localAdminClient() (auth.Client, string, error) {
	token, err := server.NewToken()
	if err != nil {
		return auth.Client{}, "", err
	}
	sum := sha256.Sum256([]byte(token))
	return auth.Client{Name: LocalAdminName, TokenSHA256: sum[:],
		Scopes: options.Scopes()}, token, nil
}

// asLocalAdmin serves h with every request's Authorization replaced by the
// local admin's token.
func asLocalAdmin(token string, h http.Handler) http.Handler {
	header := "Bearer " + token
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("Authorization", header)
		h.ServeHTTP(w, r)
	})
}

// listenAdmin listens on dir's admin socket, mode 0600, accepting only
// connections of this process's user or root (checked by peer credentials
// where the system tells them, peerUID); a connection refused so is logged
// to log. A socket file left by a server that died is removed first: the
// caller holds the database's lock, so no live server owns it. Anything
// else at the path is left alone, and an error returned.
func listenAdmin(dir string, log *slog.Logger) (net.Listener, error) {
	path := filepath.Join(dir, AdminSocket)
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("%s is longer than a Unix socket's %d bytes", path, maxSocketPath)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	// Between bind and chmod the socket has the umask's mode: peerUID
	// refuses whoever connects in that moment.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return &ownerListener{UnixListener: ln, uid: os.Getuid(), log: log}, nil
}

// ownerListener accepts the connections of uid and root only.
type ownerListener struct {
	*net.UnixListener
	uid int
	log *slog.Logger
}

func (l *ownerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			return nil, err
		}
		uid, err := peerUID(c)
		if err == nil && (uid == l.uid || uid == 0) {
			return c, nil
		}
		// Logged before the hang-up, so the log says it by the time the
		// peer sees it.
		if err != nil {
			l.log.Warn("admin socket: refused a connection whose user is unknown", "err", err)
		} else {
			l.log.Warn("admin socket: refused another user's connection", "uid", uid)
		}
		c.Close()
	}
}

// openAdminSocket serves h as the local admin on the data directory's
// admin socket. When the socket cannot be made (a read-only data
// directory, a path too long) the server runs without it, and says so.
func (d *Daemon) openAdminSocket(token string, h http.Handler) {
	ln, err := listenAdmin(d.Config.DataDir, d.Log)
	if err != nil {
		d.Log.Warn("no admin socket: the CLI's --data commands need --url and --token-file while this server runs", "err", err)
		return
	}
	d.adminLn = ln
	d.admin = &http.Server{
		Handler:           asLocalAdmin(token, h),
		ReadHeaderTimeout: d.headerTimeout(),
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(d.Log.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := d.admin.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			d.Log.Error("admin socket serve", "err", err)
		}
	}()
}

// AdminSocketPath is the admin socket's path, or "" when the server has
// none.
func (d *Daemon) AdminSocketPath() string {
	if d.adminLn == nil {
		return ""
	}
	return d.adminLn.Addr().String()
}
