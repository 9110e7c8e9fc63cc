-- 0001_init: records, anchors, full-text index, usage, audit, client tokens.
-- Times are INTEGER unix milliseconds (UTC). No pragmas here: migrations run
-- inside a transaction, where journal_mode and foreign_keys cannot change.

-- records holds every memory. seq is the integer key the FTS index joins on;
-- id is the public, sortable ULID.
CREATE TABLE records (
	seq                  INTEGER PRIMARY KEY,
	id                   TEXT    NOT NULL UNIQUE,
	namespace            TEXT    NOT NULL,
	type                 TEXT    NOT NULL,
	title                TEXT    NOT NULL,
	content              TEXT    NOT NULL,
	status               TEXT    NOT NULL,
	revision             INTEGER NOT NULL,
	writer               TEXT    NOT NULL,
	confidence           REAL    NOT NULL,
	effective_confidence REAL    NOT NULL,
	proof_count          INTEGER NOT NULL DEFAULT 0,
	refutation_count     INTEGER NOT NULL DEFAULT 0,
	supersedes           TEXT    REFERENCES records (id) ON DELETE SET NULL,
	superseded_by        TEXT    REFERENCES records (id) ON DELETE SET NULL,
	topics               TEXT    NOT NULL DEFAULT '[]', -- JSON array of strings
	source               TEXT    NOT NULL,
	created_at           INTEGER NOT NULL,
	updated_at           INTEGER NOT NULL
);

CREATE INDEX records_namespace_created_at_idx ON records (namespace, created_at);
CREATE INDEX records_namespace_status_idx ON records (namespace, status);
CREATE INDEX records_supersedes_idx ON records (supersedes);
CREATE INDEX records_superseded_by_idx ON records (superseded_by);

-- records_fts indexes title and content. It is an external-content table:
-- the text lives once, in records; the triggers keep the index in step in
-- the same transaction as the row. Only a change of title or content touches
-- the index; status, revision and counters do not.
CREATE VIRTUAL TABLE records_fts USING fts5 (
	title,
	content,
	content = 'records',
	content_rowid = 'seq',
	tokenize = 'porter unicode61'
);

CREATE TRIGGER records_fts_insert AFTER INSERT ON records BEGIN
	INSERT INTO records_fts (rowid, title, content) VALUES (new.seq, new.title, new.content);
END;

CREATE TRIGGER records_fts_delete AFTER DELETE ON records BEGIN
	INSERT INTO records_fts (records_fts, rowid, title, content) VALUES ('delete', old.seq, old.title, old.content);
END;

CREATE TRIGGER records_fts_update AFTER UPDATE OF title, content ON records
WHEN old.title IS NOT new.title OR old.content IS NOT new.content
BEGIN
	INSERT INTO records_fts (records_fts, rowid, title, content) VALUES ('delete', old.seq, old.title, old.content);
	INSERT INTO records_fts (rowid, title, content) VALUES (new.seq, new.title, new.content);
END;

-- anchors: what a record depends on (entity:, path:, host:, url:), in the
-- order given, with the last check.
CREATE TABLE anchors (
	record_id  TEXT    NOT NULL REFERENCES records (id) ON DELETE CASCADE,
	anchor     TEXT    NOT NULL,
	position   INTEGER NOT NULL,
	state      TEXT    NOT NULL DEFAULT 'unknown',
	checked_at INTEGER,
	checked_by TEXT    NOT NULL DEFAULT '',
	PRIMARY KEY (record_id, anchor)
) WITHOUT ROWID;

CREATE INDEX anchors_state_idx ON anchors (state);

-- usage counts reads apart from records, so counting never rewrites a
-- record row or its full-text index.
CREATE TABLE usage (
	record_id        TEXT    PRIMARY KEY REFERENCES records (id) ON DELETE CASCADE,
	returned         INTEGER NOT NULL DEFAULT 0,
	fetched          INTEGER NOT NULL DEFAULT 0,
	last_returned_at INTEGER,
	last_fetched_at  INTEGER
) WITHOUT ROWID;

-- audit is append-only: the triggers below refuse UPDATE and DELETE. It has
-- no foreign key, so rows outlive the records they name.
CREATE TABLE audit (
	seq       INTEGER PRIMARY KEY,
	at        INTEGER NOT NULL,
	client    TEXT    NOT NULL,
	action    TEXT    NOT NULL,
	namespace TEXT    NOT NULL DEFAULT '',
	record_id TEXT    NOT NULL DEFAULT '',
	detail    TEXT    NOT NULL DEFAULT ''
);

CREATE INDEX audit_at_idx ON audit (at);
CREATE INDEX audit_record_id_idx ON audit (record_id);

CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit BEGIN
	SELECT RAISE(ABORT, 'audit is append-only');
END;

CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit BEGIN
	SELECT RAISE(ABORT, 'audit is append-only');
END;

-- client_tokens keeps the SHA-256 (hex) of each generated client token.
CREATE TABLE client_tokens (
	client       TEXT    PRIMARY KEY,
	token_sha256 TEXT    NOT NULL,
	updated_at   INTEGER NOT NULL
) WITHOUT ROWID;
