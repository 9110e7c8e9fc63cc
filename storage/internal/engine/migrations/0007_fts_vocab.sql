-- The full-text index's vocabulary, one row per term with the number of
-- records holding it: the document frequencies hearth_rank (rank.go) caches
-- instead of scanning a term's whole doclist on every query, as bm25 does.
CREATE VIRTUAL TABLE records_vocab USING fts5vocab(records_fts, row);
