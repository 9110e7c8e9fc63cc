-- 0087_fts_automerge: FTS5 merges a level of the word index once it holds
-- automerge segments, inside the commit that wrote the last one. At 4, the
-- default, that merging was about two fifths of a group commit's time. At 8 a
-- commit merges less often, and the writer merges the levels holding 4
-- or more once it is idle (storage.tidyIndex, indexAutomerge in
-- ftsmerge.go, which recreateIndex sets again after a repair).

INSERT INTO records_fts (records_fts, rank) VALUES ('automerge', 8);
