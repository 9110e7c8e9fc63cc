-- 0003_fts_len: each record's length in its full-text columns, stored
-- beside them, so that ranking a match and counting the average length
-- read no tsvector (docs/postgres.md, Full-text search).
--
-- hearth_tsv_len is a tsvector's length in tokens, as the ranking counts
-- it: its positions, each lexeme's (PostgreSQL keeps at most 256 of a
-- lexeme). NULL for an empty or NULL tsvector, which matches nothing.
CREATE FUNCTION hearth_tsv_len(v tsvector) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
	SELECT sum(cardinality(u.positions))::integer FROM unnest(v) AS u
$$;

-- fts_len and cjk_len are hearth_tsv_len of fts and cjk: a generated
-- column cannot read another, so each computes its column's expression
-- again (0001_init).
ALTER TABLE records
	ADD COLUMN fts_len integer GENERATED ALWAYS AS (hearth_tsv_len(
		setweight(to_tsvector('hearth', hearth_fts_text(title)), 'A')
		|| setweight(to_tsvector('hearth', hearth_fts_text(content)), 'B'))) STORED,
	ADD COLUMN cjk_len integer GENERATED ALWAYS AS (hearth_tsv_len(hearth_cjk(title, content))) STORED;
