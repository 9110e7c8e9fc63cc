package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// newDatabases gives each daemon of a run its own PostgreSQL database
// (harness.Config.Database): created, empty, on the server of base (a
// postgres:// URL whose user may create databases), named
// hearth_eval_<random>, and dropped by the function it returns. The set
// is stored into a new database per daemon, as into a new data directory
// on SQLite: a database holding records already would count them in the
// figures.
func newDatabases(base string) (func(ctx context.Context) (string, func() error, error), error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		// Not the URL itself: it may hold a password.
		return nil, usageError{errors.New("-database: want a URL postgres://user:password@host:port/database")}
	}
	return func(ctx context.Context) (string, func() error, error) {
		b := make([]byte, 6)
		rand.Read(b)
		name := "hearth_eval_" + hex.EncodeToString(b)
		admin, err := sql.Open("pgx", base)
		if err != nil {
			return "", nil, err
		}
		if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+name); err != nil {
			admin.Close()
			return "", nil, fmt.Errorf("create database %s: %w", name, err)
		}
		db := *u
		db.Path = "/" + name
		drop := func() error {
			defer admin.Close()
			_, err := admin.ExecContext(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
			return err
		}
		return db.String(), drop, nil
	}, nil
}

// redact writes a database URL with its password as xxxxx.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(a URL that does not parse)"
	}
	return u.Redacted()
}
