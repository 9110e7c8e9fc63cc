-- 0081_cjk_only: records_cjk (migration 0008) indexes only the records
-- whose title or content holds a Chinese, Japanese or Korean character:
-- hearth_has_cjk (cjk.go) is true exactly when the hearth_cjk tokenizer
-- gives the text a token. Every other record yields no token there, yet
-- indexing it still cost the single writer, on every store, a docsize row,
-- a rewrite of the index's totals and a flush of the index at each
-- savepoint of its group commit.
--
-- The index's content table is a view of those records, so that FTS5's
-- own 'rebuild' and 'integrity-check' see the same rows the triggers keep.
-- bm25 over records_cjk now counts the records that hold CJK text, not
-- every record, as its document count and average length.

DROP TRIGGER records_cjk_insert;
DROP TRIGGER records_cjk_delete;
DROP TRIGGER records_cjk_update;
DROP TABLE records_cjk;

CREATE VIEW records_cjk_source AS
SELECT seq, title, content FROM records WHERE hearth_has_cjk(title, content);

CREATE VIRTUAL TABLE records_cjk USING fts5 (
	title, content,
	content = 'records_cjk_source', content_rowid = 'seq',
	tokenize = 'hearth_cjk'
);
INSERT INTO records_cjk (records_cjk) VALUES ('rebuild');

CREATE TRIGGER records_cjk_insert AFTER INSERT ON records
WHEN hearth_has_cjk(new.title, new.content)
BEGIN
	INSERT INTO records_cjk (rowid, title, content) VALUES (new.seq, new.title, new.content);
END;

CREATE TRIGGER records_cjk_delete AFTER DELETE ON records
WHEN hearth_has_cjk(old.title, old.content)
BEGIN
	INSERT INTO records_cjk (records_cjk, rowid, title, content) VALUES ('delete', old.seq, old.title, old.content);
END;

CREATE TRIGGER records_cjk_update AFTER UPDATE OF title, content ON records
WHEN (old.title IS NOT new.title OR old.content IS NOT new.content)
	AND (hearth_has_cjk(old.title, old.content) OR hearth_has_cjk(new.title, new.content))
BEGIN
	INSERT INTO records_cjk (records_cjk, rowid, title, content)
	SELECT 'delete', old.seq, old.title, old.content WHERE hearth_has_cjk(old.title, old.content);
	INSERT INTO records_cjk (rowid, title, content)
	SELECT new.seq, new.title, new.content WHERE hearth_has_cjk(new.title, new.content);
END;
