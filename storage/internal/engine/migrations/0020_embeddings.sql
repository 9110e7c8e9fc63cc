-- 0020_embeddings: record vectors for embedding retrieval (docs/design.md R-M9,
-- R-M10) and the change feed that keeps the in-memory vector index in step
-- with the store.
--
-- embeddings holds one vector per record: little-endian float32 values,
-- unit length, keyed by the record and by digest = sha256 of model,
-- snapshot and the record's text (title\ncontent). A vector whose digest is
-- not the one the record's text gives under the encoder's model and
-- snapshot is stale. Purge drops it by the foreign key; forget by the
-- trigger below, so every path that forgets (memory_forget, candidate
-- expiry, the nightly review) drops it in its own transaction.
CREATE TABLE embeddings (
	record_id   TEXT    PRIMARY KEY REFERENCES records (id) ON DELETE CASCADE,
	digest      TEXT    NOT NULL,
	model       TEXT    NOT NULL,
	snapshot    TEXT    NOT NULL,
	vector      BLOB    NOT NULL,
	embedded_at INTEGER NOT NULL
);

CREATE TRIGGER embeddings_forget AFTER UPDATE OF status ON records
WHEN new.status = 'deleted'
BEGIN
	DELETE FROM embeddings WHERE record_id = new.id;
END;

-- vector_changes is the change feed: for each record, the version of its
-- last change that matters to vector search (created, text, status,
-- namespace or type changed, deleted, vector put or dropped). Versions
-- grow with every such change under the single writer, so a reader that
-- applied every change up to version V reads exactly the rows above V to
-- catch up. A purged record keeps its row, pointing at no record.
CREATE TABLE vector_changes (
	record_seq INTEGER PRIMARY KEY,
	version    INTEGER NOT NULL
);

CREATE INDEX vector_changes_version_idx ON vector_changes (version);

INSERT INTO vector_changes (record_seq, version) SELECT seq, seq FROM records;

-- Each trigger moves one record to the feed's end: UPDATE, then INSERT when
-- the record has no row yet (INSERT OR REPLACE would take the outer
-- statement's conflict policy inside a trigger, and an UPSERT's is ABORT).
-- A subquery for a purged record's seq is NULL and matches no row.
CREATE TRIGGER vector_changes_record_insert AFTER INSERT ON records BEGIN
	UPDATE vector_changes SET version = (SELECT MAX(version) + 1 FROM vector_changes) WHERE record_seq = new.seq;
	INSERT INTO vector_changes (record_seq, version)
	SELECT new.seq, (SELECT IFNULL(MAX(version), 0) + 1 FROM vector_changes)
	WHERE NOT EXISTS (SELECT 1 FROM vector_changes WHERE record_seq = new.seq);
END;

CREATE TRIGGER vector_changes_record_update AFTER UPDATE OF title, content, status, namespace, type ON records
WHEN old.title IS NOT new.title OR old.content IS NOT new.content OR old.status IS NOT new.status
	OR old.namespace IS NOT new.namespace OR old.type IS NOT new.type
BEGIN
	UPDATE vector_changes SET version = (SELECT MAX(version) + 1 FROM vector_changes) WHERE record_seq = new.seq;
	INSERT INTO vector_changes (record_seq, version)
	SELECT new.seq, (SELECT IFNULL(MAX(version), 0) + 1 FROM vector_changes)
	WHERE NOT EXISTS (SELECT 1 FROM vector_changes WHERE record_seq = new.seq);
END;

CREATE TRIGGER vector_changes_record_delete AFTER DELETE ON records BEGIN
	UPDATE vector_changes SET version = (SELECT MAX(version) + 1 FROM vector_changes) WHERE record_seq = old.seq;
	INSERT INTO vector_changes (record_seq, version)
	SELECT old.seq, (SELECT IFNULL(MAX(version), 0) + 1 FROM vector_changes)
	WHERE NOT EXISTS (SELECT 1 FROM vector_changes WHERE record_seq = old.seq);
END;

CREATE TRIGGER vector_changes_embedding_insert AFTER INSERT ON embeddings
WHEN EXISTS (SELECT 1 FROM records WHERE id = new.record_id)
BEGIN
	UPDATE vector_changes SET version = (SELECT MAX(version) + 1 FROM vector_changes) WHERE record_seq = (SELECT seq FROM records WHERE id = new.record_id);
	INSERT INTO vector_changes (record_seq, version)
	SELECT (SELECT seq FROM records WHERE id = new.record_id), (SELECT IFNULL(MAX(version), 0) + 1 FROM vector_changes)
	WHERE NOT EXISTS (SELECT 1 FROM vector_changes WHERE record_seq = (SELECT seq FROM records WHERE id = new.record_id));
END;

CREATE TRIGGER vector_changes_embedding_update AFTER UPDATE ON embeddings
WHEN EXISTS (SELECT 1 FROM records WHERE id = new.record_id)
BEGIN
	UPDATE vector_changes SET version = (SELECT MAX(version) + 1 FROM vector_changes) WHERE record_seq = (SELECT seq FROM records WHERE id = new.record_id);
	INSERT INTO vector_changes (record_seq, version)
	SELECT (SELECT seq FROM records WHERE id = new.record_id), (SELECT IFNULL(MAX(version), 0) + 1 FROM vector_changes)
	WHERE NOT EXISTS (SELECT 1 FROM vector_changes WHERE record_seq = (SELECT seq FROM records WHERE id = new.record_id));
END;

CREATE TRIGGER vector_changes_embedding_delete AFTER DELETE ON embeddings
WHEN EXISTS (SELECT 1 FROM records WHERE id = old.record_id)
BEGIN
	UPDATE vector_changes SET version = (SELECT MAX(version) + 1 FROM vector_changes) WHERE record_seq = (SELECT seq FROM records WHERE id = old.record_id);
	INSERT INTO vector_changes (record_seq, version)
	SELECT (SELECT seq FROM records WHERE id = old.record_id), (SELECT IFNULL(MAX(version), 0) + 1 FROM vector_changes)
	WHERE NOT EXISTS (SELECT 1 FROM vector_changes WHERE record_seq = (SELECT seq FROM records WHERE id = old.record_id));
END;
