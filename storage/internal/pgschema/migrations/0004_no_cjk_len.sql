-- 0004_no_cjk_len: records.cjk_len (0003) is dropped. Generating it ran
-- hearth_cjk a second time on every write (its expression cannot read the
-- cjk column), and hearth_cjk is the costliest part of a record's row: its
-- regular expression reads the whole text of every record, CJK or not. The
-- CJK ranking counts the length of the few records holding CJK text from
-- their tsvector instead (docs/postgres.md, Full-text search).
ALTER TABLE records DROP COLUMN cjk_len;
