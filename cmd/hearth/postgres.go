//go:build postgres

package main

// A build with the postgres tag links PostgreSQL's driver (pgx v5), so that
// `hearth serve --database` and the database_url option work; it costs the
// binary about 4 MB, which is why the default build leaves it out
// (docs/operations.md, "PostgreSQL").
import _ "github.com/hearth-memory/hearth/storage/postgres"

// postgresBuilt says this build links PostgreSQL's driver.
const postgresBuilt = true
