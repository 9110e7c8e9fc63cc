-- 0082_fts_pending: a new record reaches the full-text index (records_fts)
-- once per write transaction instead of once per record. FTS5 writes its
-- pending terms to disk at every savepoint, and the writer's group commit
-- runs each caller's write under a savepoint of its own (tx.go): with the
-- insert trigger of 0006, every store of a group still wrote, and later
-- merged, an index segment of one record. Now the insert trigger only
-- notes the record in records_fts_pending, and the writer indexes every
-- noted record in one statement just before it commits (indexPendingTx),
-- in the same transaction: readers, who see committed transactions only,
-- never see a record without its index rows, and the index stays what
-- 0006's triggers made it.
--
-- A noted record is not in the index yet: a change or delete of it in the
-- same transaction only updates or drops the note, and the record is
-- indexed as it is at commit.
-- The full-text rowid is the record's namespace key shifted 40 bits left,
-- ORed with its seq (0075). The key of a new record's namespace is made by
-- the insert trigger; the writer's indexing joins namespace_keys for it.
CREATE TABLE records_fts_pending (seq INTEGER PRIMARY KEY);

DROP TRIGGER records_fts_insert;
DROP TRIGGER records_fts_delete;
DROP TRIGGER records_fts_update;

CREATE TRIGGER records_fts_insert AFTER INSERT ON records BEGIN
	INSERT INTO namespace_keys (namespace, key)
		SELECT new.namespace, (SELECT coalesce(max(key), 0) + 1 FROM namespace_keys)
		WHERE NOT EXISTS (SELECT 1 FROM namespace_keys WHERE namespace = new.namespace);
	INSERT INTO records_fts_pending (seq) VALUES (new.seq);
END;

CREATE TRIGGER records_fts_delete AFTER DELETE ON records BEGIN
	INSERT INTO records_fts (records_fts, rowid, title, content, fts_scope)
	SELECT 'delete', ((SELECT key FROM namespace_keys WHERE namespace = old.namespace) << 40) | old.seq,
		old.title, old.content, old.fts_scope
	WHERE NOT EXISTS (SELECT 1 FROM records_fts_pending WHERE seq = old.seq);
	DELETE FROM records_fts_pending WHERE seq = old.seq;
END;

-- A noted record that moves to another namespace is indexed at commit
-- under that namespace's key, which must exist by then.
CREATE TRIGGER records_fts_update AFTER UPDATE OF title, content, namespace ON records
WHEN old.title IS NOT new.title OR old.content IS NOT new.content OR old.namespace IS NOT new.namespace
BEGIN
	INSERT INTO namespace_keys (namespace, key)
		SELECT new.namespace, (SELECT coalesce(max(key), 0) + 1 FROM namespace_keys)
		WHERE NOT EXISTS (SELECT 1 FROM namespace_keys WHERE namespace = new.namespace);
	INSERT INTO records_fts (records_fts, rowid, title, content, fts_scope)
	SELECT 'delete', ((SELECT key FROM namespace_keys WHERE namespace = old.namespace) << 40) | old.seq,
		old.title, old.content, old.fts_scope
	WHERE NOT EXISTS (SELECT 1 FROM records_fts_pending WHERE seq = old.seq);
	INSERT INTO records_fts (rowid, title, content, fts_scope)
	SELECT ((SELECT key FROM namespace_keys WHERE namespace = new.namespace) << 40) | new.seq,
		new.title, new.content, new.fts_scope
	WHERE NOT EXISTS (SELECT 1 FROM records_fts_pending WHERE seq = old.seq);
END;
