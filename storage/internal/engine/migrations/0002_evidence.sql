-- 0002_evidence: what clients said about records (docs/design.md R-E).
-- Times are INTEGER unix milliseconds (UTC).

-- evidence keeps one stance per client per record: a client's later call
-- deletes its row and inserts a new one, so seq (the rowid, always above every
-- row present) is the arrival order the effective confidence is computed in.
-- records.proof_count, refutation_count and effective_confidence are derived
-- from these rows in the transaction that changes them.
CREATE TABLE evidence (
	seq       INTEGER PRIMARY KEY,
	record_id TEXT    NOT NULL REFERENCES records (id) ON DELETE CASCADE,
	client    TEXT    NOT NULL,
	stance    TEXT    NOT NULL CHECK (stance IN ('corroborates', 'contradicts')),
	note      TEXT    NOT NULL DEFAULT '',
	at        INTEGER NOT NULL,
	UNIQUE (record_id, client)
);

-- The unique constraint's index (record_id, client) serves the per-record
-- reads; this one gives them in arrival order without a sort.
CREATE INDEX evidence_record_id_seq_idx ON evidence (record_id, seq);
