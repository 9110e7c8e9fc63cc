-- 0005_json_each_rows: json_each (0002) tells the planner it gives 10 rows.
-- A STRICT set-returning SQL function is not inlined, so the planner took
-- PostgreSQL's default of 1,000 rows for every list the domain passes (ids
-- and seqs of a page or a search's hits, most of ten or so), and joined
-- such a list to records by hashing the whole table: Search's read of its
-- hits (readHits) scanned every record of a 10,000-record store, 13 to 26
-- ms, where looking each one up by its key takes well under one
-- (docs/postgres.md, Full-text search). The estimate only steers plans; a
-- longer list is still read whole.
ALTER FUNCTION json_each(text) ROWS 10;
