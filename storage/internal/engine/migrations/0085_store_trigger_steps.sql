-- 0085_store_trigger_steps: two triggers every store fires, rewritten to
-- write the same rows in fewer steps, as 0083 did for two others. The
-- single writer runs them for every record; under concurrent stores they
-- are a large share of its time.

-- The namespace key of a new record's namespace (0082) is made from a
-- single-row VALUES: the INSERT ... SELECT it was made with reads
-- namespace_keys, the table it writes, so SQLite copied its one row
-- through a temporary table on every store, the namespace known or not.
DROP TRIGGER records_fts_insert;
CREATE TRIGGER records_fts_insert AFTER INSERT ON records BEGIN
	INSERT INTO namespace_keys (namespace, key)
	VALUES (new.namespace, (SELECT coalesce(max(key), 0) + 1 FROM namespace_keys))
	ON CONFLICT (namespace) DO NOTHING;
	INSERT INTO records_fts_pending (seq) VALUES (new.seq);
END;

-- A new record moves to the feed's end (0020, 0083) in one trigger and one
-- statement: inserted when it has no row, its row moved when it has one (a
-- purged record's seq taken again). Both cases took two triggers, each
-- testing for the row before it ran.
DROP TRIGGER vector_changes_record_insert;
DROP TRIGGER vector_changes_record_reinsert;
CREATE TRIGGER vector_changes_record_insert AFTER INSERT ON records BEGIN
	INSERT INTO vector_changes (record_seq, version)
	VALUES (new.seq, (SELECT IFNULL(MAX(version), 0) + 1 FROM vector_changes))
	ON CONFLICT (record_seq) DO UPDATE SET version = excluded.version;
END;
