-- records_cjk indexes the Chinese, Japanese and Korean text of title and
-- content as overlapping character bigrams, with each character also a
-- token at the same position (tokenizer hearth_cjk, cjk.go), so a word
-- inside a sentence written without spaces is found. Other text yields no
-- token here: records_fts (porter, unicode61) stays the index for it, and
-- keeps a whole CJK run as one token.
CREATE VIRTUAL TABLE records_cjk USING fts5 (
	title, content,
	content = 'records', content_rowid = 'seq',
	tokenize = 'hearth_cjk'
);
INSERT INTO records_cjk (records_cjk) VALUES ('rebuild');

CREATE TRIGGER records_cjk_insert AFTER INSERT ON records BEGIN
	INSERT INTO records_cjk (rowid, title, content) VALUES (new.seq, new.title, new.content);
END;

CREATE TRIGGER records_cjk_delete AFTER DELETE ON records BEGIN
	INSERT INTO records_cjk (records_cjk, rowid, title, content) VALUES ('delete', old.seq, old.title, old.content);
END;

CREATE TRIGGER records_cjk_update AFTER UPDATE OF title, content ON records
WHEN old.title IS NOT new.title OR old.content IS NOT new.content
BEGIN
	INSERT INTO records_cjk (records_cjk, rowid, title, content) VALUES ('delete', old.seq, old.title, old.content);
	INSERT INTO records_cjk (rowid, title, content) VALUES (new.seq, new.title, new.content);
END;
