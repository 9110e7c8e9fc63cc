-- 0006_fts_scope: index each record's namespace in the full-text table as
-- one opaque token, so a search ANDs its scope chain into the MATCH and
-- FTS5 ranks (bm25) only the rows in that chain instead of every match in
-- the store. The token is 'ns' || hex(namespace) || '0': hex keeps it one
-- token for unicode61, and the final digit keeps the porter stemmer off it.
-- It lives in records as a virtual generated column, so the external
-- content table and the index agree (FTS5's integrity-check and rebuild
-- read it from there). The exact namespace filter in the search query stays
-- the authority; the token only narrows what is scored.

ALTER TABLE records ADD COLUMN fts_scope TEXT GENERATED ALWAYS AS ('ns' || hex(namespace) || '0') VIRTUAL;

DROP TRIGGER records_fts_insert;
DROP TRIGGER records_fts_delete;
DROP TRIGGER records_fts_update;
DROP TABLE records_fts;

CREATE VIRTUAL TABLE records_fts USING fts5 (
	title,
	content,
	fts_scope,
	content = 'records',
	content_rowid = 'seq',
	tokenize = 'porter unicode61'
);

INSERT INTO records_fts (records_fts) VALUES ('rebuild');

CREATE TRIGGER records_fts_insert AFTER INSERT ON records BEGIN
	INSERT INTO records_fts (rowid, title, content, fts_scope)
		VALUES (new.seq, new.title, new.content, new.fts_scope);
END;

CREATE TRIGGER records_fts_delete AFTER DELETE ON records BEGIN
	INSERT INTO records_fts (records_fts, rowid, title, content, fts_scope)
		VALUES ('delete', old.seq, old.title, old.content, old.fts_scope);
END;

CREATE TRIGGER records_fts_update AFTER UPDATE OF title, content, namespace ON records
WHEN old.title IS NOT new.title OR old.content IS NOT new.content OR old.namespace IS NOT new.namespace
BEGIN
	INSERT INTO records_fts (records_fts, rowid, title, content, fts_scope)
		VALUES ('delete', old.seq, old.title, old.content, old.fts_scope);
	INSERT INTO records_fts (rowid, title, content, fts_scope)
		VALUES (new.seq, new.title, new.content, new.fts_scope);
END;
