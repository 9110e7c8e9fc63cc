-- 0003_sessions_jobs: session close receipts and the durable job queue
-- (docs/design.md R-Z2, R-J1). Times are INTEGER unix milliseconds (UTC).

-- receipts keeps the result of each session close under its op_id, bound to
-- the client that closed and a digest (SHA-256, hex) of every input. Past
-- retention_deleted_days maintenance turns a receipt into a tombstone: the
-- result columns are emptied and tombstoned_at is set, while op_id, client,
-- digest and closed_at stay so that a replay is refused as expired and the
-- op_id is never reused.
CREATE TABLE receipts (
	op_id                 TEXT    PRIMARY KEY,
	client                TEXT    NOT NULL,
	digest                TEXT    NOT NULL,
	closed_at             INTEGER NOT NULL,
	session_id            TEXT    NOT NULL DEFAULT '',
	namespace             TEXT    NOT NULL DEFAULT '',
	summary_id            TEXT    NOT NULL DEFAULT '',
	summary_kept          INTEGER NOT NULL DEFAULT 0,
	notes_refused         INTEGER NOT NULL DEFAULT 0,
	notes_refused_pattern TEXT    NOT NULL DEFAULT '',
	job_id                TEXT    NOT NULL DEFAULT '',
	tombstoned_at         INTEGER
) WITHOUT ROWID;

CREATE INDEX receipts_closed_at_idx ON receipts (closed_at) WHERE tombstoned_at IS NULL;

-- jobs is the durable queue. A worker leases a job (state leased, attempts
-- + 1, lease_owner and lease_expires_at set) and completes it in the same
-- transaction as the job's effects; a lease whose owner died is taken again.
-- A failure goes back to queued with run_after pushed out, or to failed once
-- attempts reach max_attempts; failed jobs stay, with last_error. payload is
-- a JSON document that passed the screen. key, when set, is unique: the same
-- scheduled work (one maintenance run per review slot) is queued once.
CREATE TABLE jobs (
	id               TEXT    PRIMARY KEY,
	kind             TEXT    NOT NULL,
	key              TEXT    UNIQUE,
	payload          TEXT    NOT NULL DEFAULT '{}',
	state            TEXT    NOT NULL CHECK (state IN ('queued', 'leased', 'done', 'failed')),
	attempts         INTEGER NOT NULL DEFAULT 0,
	max_attempts     INTEGER NOT NULL,
	lease_owner      TEXT    NOT NULL DEFAULT '',
	lease_expires_at INTEGER,
	run_after        INTEGER NOT NULL,
	last_error       TEXT    NOT NULL DEFAULT '',
	created_at       INTEGER NOT NULL,
	updated_at       INTEGER NOT NULL,
	done_at          INTEGER
) WITHOUT ROWID;

CREATE INDEX jobs_state_run_after_idx ON jobs (state, run_after);
CREATE INDEX jobs_kind_state_idx ON jobs (kind, state);
