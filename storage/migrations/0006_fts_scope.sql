-- 0006_fts_scope: index each record's namespace in the full-text table as
-- one opaque token, so a search ANDs its scope chain into the MATCH and
-- FTS5 ranks (bm25) only the rows in that chain instead of every match in
-- the store. The token is 'ns' || hex(namespace) || '0': hex keeps it one
-- token for unicode61, and the final digit keeps the porter stemmer off it.
-- The exact namespace filter in the search query stays the authority; the
-- token only narrows what is scored.

DROP TRIGGER records_fts_insert;
DROP TRIGGER records_fts_delete;
DROP TRIGGER records_fts_update;
DROP TABLE records_fts;

CREATE VIRTUAL TABLE records_fts USING fts5 (
	title,
	content,
	namespace,
	content = 'records',
	content_rowid = 'seq',
	tokenize = 'porter unicode61'
);

INSERT INTO records_fts (rowid, title, content, namespace)
	SELECT seq, title, content, 'ns' || hex(namespace) || '0' FROM records;

CREATE TRIGGER records_fts_insert AFTER INSERT ON records BEGIN
	INSERT INTO records_fts (rowid, title, content, namespace)
		VALUES (new.seq, new.title, new.content, 'ns' || hex(new.namespace) || '0');
END;

CREATE TRIGGER records_fts_delete AFTER DELETE ON records BEGIN
	INSERT INTO records_fts (records_fts, rowid, title, content, namespace)
		VALUES ('delete', old.seq, old.title, old.content, 'ns' || hex(old.namespace) || '0');
END;

CREATE TRIGGER records_fts_update AFTER UPDATE OF title, content, namespace ON records
WHEN old.title IS NOT new.title OR old.content IS NOT new.content OR old.namespace IS NOT new.namespace
BEGIN
	INSERT INTO records_fts (records_fts, rowid, title, content, namespace)
		VALUES ('delete', old.seq, old.title, old.content, 'ns' || hex(old.namespace) || '0');
	INSERT INTO records_fts (rowid, title, content, namespace)
		VALUES (new.seq, new.title, new.content, 'ns' || hex(new.namespace) || '0');
END;
