-- 0098_extraction_receipts: what each model extraction saw and did (issue
-- #39): the input it read and the model's reply, both as they passed the
-- screen (secrets replaced by placeholders), what was kept and what was
-- refused and why, or why the reply could not be used. Purged after
-- retention_deleted_days by the nightly maintenance. No foreign keys:
-- receipts outlive the jobs and records they name.
CREATE TABLE extraction_receipts (
	id         TEXT    PRIMARY KEY,
	job_id     TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	namespace  TEXT    NOT NULL,
	client     TEXT    NOT NULL,
	-- kept (the reply was read; some memories may be refused), unparsable
	-- (no reply fit the schema) or failed (no server gave a reply).
	outcome    TEXT    NOT NULL,
	server     TEXT    NOT NULL DEFAULT '',
	model      TEXT    NOT NULL DEFAULT '',
	input      TEXT    NOT NULL,
	reply      TEXT    NOT NULL DEFAULT '',
	kept       TEXT    NOT NULL DEFAULT '[]', -- JSON: ids of the records stored
	refused    TEXT    NOT NULL DEFAULT '[]', -- JSON: [{"index","reason"}]
	error      TEXT    NOT NULL DEFAULT '',
	rerun_of   TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX extraction_receipts_created_idx ON extraction_receipts (created_at);
