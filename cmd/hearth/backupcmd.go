package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/options"
	"github.com/hearth-memory/hearth/storage"
	"github.com/hearth-memory/hearth/storage/fileio"
)

// dbFile is the database's file name in a data directory.
const dbFile = "hearth.db"

// backupCmd runs `hearth backup --data DIR --out FILE`: a verified copy of
// DIR's database. With no server holding DIR it copies the file itself;
// while a server holds DIR it asks that server (memory_backup) over DIR's
// admin socket, or at --url with --token-file (admin scope), and moves the
// copy to FILE.
var backupSpec = spec{name: "backup", args: "--data DIR --out FILE [--url URL --token-file FILE]",
	about: `Writes a verified copy of DIR's database to FILE. With no server holding
DIR it copies the file itself; while a server holds DIR it asks that server
(memory_backup) and moves the copy to FILE: over DIR's admin socket as the
local admin, or with --token-file at --url as a client with admin scope.`}

func backupCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := backupSpec.newFlags(stderr)
	data := fs.String("data", "", "the data directory whose database to copy")
	out := fs.String("out", "", "the backup file to write; it must not exist")
	api := addAPIFlags(fs, "admin")
	if code, ok := backupSpec.parse(fs, args, stdout, stderr); !ok {
		return code
	}
	switch {
	case *data == "" || *out == "":
		return backupSpec.fail(stderr, "--data and --out are required")
	case fs.NArg() > 0:
		return backupSpec.fail(stderr, "unexpected argument %q", fs.Arg(0))
	}
	if _, err := os.Lstat(*out); err == nil {
		fmt.Fprintf(stderr, "hearth backup: %s exists; a backup never overwrites a file\n", *out)
		return 1
	}
	switch where, err := postgresConfigured(*data); {
	case err != nil:
		fmt.Fprintln(stderr, "hearth backup:", err)
		return 1
	case where != "":
		fmt.Fprintf(stderr, "hearth backup: refused: %s; there is no SQLite file to copy: "+
			"back that database up with pg_dump (and restore it with pg_restore) or the PostgreSQL server's own tools\n", where)
		return 1
	}
	db := filepath.Join(*data, dbFile)
	ask, err := serverOnly(*data)
	if err != nil {
		fmt.Fprintf(stderr, "hearth backup: no database in %s: %v\n", *data, err)
		return 1
	}
	var lock *storage.Lock
	if !ask {
		lock, err = storage.AcquireLock(db)
	}
	switch {
	case ask:
		// A server with no database file in DIR: it says what backs its
		// database up.
	case err == nil:
		// No server: copy the file here. The lock is released first, so a
		// server may start meanwhile; SQLite keeps the copy consistent.
		lock.Release()
		info, err := storage.BackupFile(ctx, db, *out)
		if err != nil {
			fmt.Fprintln(stderr, "hearth backup:", err)
			return 1
		}
		fmt.Fprintf(stdout, "backup of %s (no server running) written to %s: %d records, %d bytes, verified in %d ms\n",
			*data, info.Path, info.Records, info.Bytes, info.Took.Milliseconds())
		return 0
	case !errors.Is(err, storage.ErrLocked):
		fmt.Fprintln(stderr, "hearth backup:", err)
		return 1
	}
	var resp hearthv1.BackupResponse
	if code := api.ask(ctx, stderr, "hearth backup", *data, err, "memory_backup", map[string]any{}, &resp); code != 0 {
		return code
	}
	if err := moveFile(resp.GetPath(), *out); err != nil {
		fmt.Fprintf(stderr, "hearth backup: the server wrote %s, which could not be moved to %s: %v\n", resp.GetPath(), *out, err)
		return 1
	}
	fmt.Fprintf(stdout, "backup by the running server written to %s: %d records, %d bytes, verified in %d ms\n",
		*out, resp.GetRecords(), resp.GetBytes(), resp.GetTookMs())
	return 0
}

// serverOnly reports whether data holds no database file but a running
// server's admin socket: a server storing in PostgreSQL (docs/operations.md,
// "PostgreSQL"), which only that server can be asked about. err says why
// data has neither.
func serverOnly(data string) (bool, error) {
	_, err := os.Stat(filepath.Join(data, dbFile))
	if err == nil {
		return false, nil
	}
	if _, serr := os.Stat(filepath.Join(data, AdminSocket)); serr == nil {
		return true, nil
	}
	return false, err
}

// postgresConfigured says where DIR's records are when they are in
// PostgreSQL by DIR's options.json (database_url, the URL with its
// password hidden), or "" when the file names no database: then they are
// in DIR's SQLite file, as `hearth serve --data DIR` alone stores them.
// An options file that does not load is an error, not a guess.
func postgresConfigured(data string) (string, error) {
	path := options.Path(data)
	opts, err := options.Load(path)
	if err != nil {
		return "", fmt.Errorf("reading %s to know where the records are: %w", path, err)
	}
	if opts.DatabaseURL == "" {
		return "", nil
	}
	return fmt.Sprintf("the records of %s are in PostgreSQL at %s (database_url in %s)", data, options.RedactDatabaseURL(opts.DatabaseURL), path), nil
}

var restoreSpec = spec{name: "restore", args: "--data DIR FILE",
	about: `Replaces DIR's database with the backup FILE, after checking it. The
server of DIR must be stopped; the database replaced is kept in
DIR/backups/before-restore-<time>. A DIR whose records are in PostgreSQL
(database_url) is refused: restore that database with pg_restore.`}

// restoreCmd runs `hearth restore --data DIR FILE`.
func restoreCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := restoreSpec.newFlags(stderr)
	data := fs.String("data", "", "the data directory whose database to replace (its server must be stopped)")
	if code, ok := restoreSpec.parse(fs, args, stdout, stderr); !ok {
		return code
	}
	switch {
	case *data == "":
		return restoreSpec.fail(stderr, "--data is required")
	case fs.NArg() != 1:
		return restoreSpec.fail(stderr, "want one FILE, the backup to restore")
	}
	from := fs.Arg(0)
	where, err := postgresConfigured(*data)
	if err != nil {
		fmt.Fprintln(stderr, "hearth restore:", err)
		return 1
	}
	if where == "" {
		// A server without a database file in DIR: one on PostgreSQL,
		// given --database on its command line.
		if ask, _ := serverOnly(*data); ask {
			where = fmt.Sprintf("the server running on %s stores its records in PostgreSQL (its admin socket %s is there, and no %s)", *data, AdminSocket, dbFile)
		}
	}
	if where != "" {
		fmt.Fprintf(stderr, "hearth restore: refused: %s; a SQLite backup is not restored there, and nothing was changed: "+
			"restore that database with pg_restore (from pg_dump's archive) or the PostgreSQL server's own tools\n", where)
		return 1
	}
	aside := filepath.Join(*data, "backups", "before-restore-"+time.Now().UTC().Format("20060102T150405Z"))
	info, err := storage.Restore(ctx, filepath.Join(*data, dbFile), from, aside)
	switch {
	case errors.Is(err, storage.ErrLocked):
		fmt.Fprintf(stderr, "hearth restore: refused: a server holds %s (%v); stop it first\n", *data, err)
		return 1
	case err != nil:
		fmt.Fprintln(stderr, "hearth restore:", err)
		return 1
	}
	fmt.Fprintf(stdout, "restored %d records from %s into %s\n", info.Records, from, *data)
	if info.Aside != "" {
		fmt.Fprintf(stdout, "the database it replaced is in %s\n", info.Aside)
	}
	fmt.Fprintln(stdout, "the next start applies the migrations the backup lacks")
	return 0
}

// moveFile moves src to dst, which must not exist: a rename, or a copy
// (0600, synced) and removal across file systems.
func moveFile(src, dst string) error {
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("%s exists", dst)
	}
	if err := os.Rename(src, dst); err == nil {
		return nil
	}
	if err := fileio.Copy(src, dst); err != nil {
		return err
	}
	return os.Remove(src)
}
