// Package postgres links PostgreSQL's driver (pgx v5, through database/sql)
// into a build, for storage.OpenPostgres: a build that does not import it
// stays without pgx, 4 MB smaller (docs/postgres.md, "The driver and the
// binary"), and OpenPostgres there says the driver is missing.
package postgres

import (
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)
