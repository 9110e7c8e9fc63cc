-- 0084_supersede_partial: the indexes of records.supersedes and
-- records.superseded_by (0001) hold only the records that name another.
-- They serve the foreign keys' ON DELETE SET NULL, which looks a purged
-- record up by equality, and equality implies a value; but every store
-- wrote an entry of NULL into each, two of the b-tree inserts a store pays
-- for, while few records ever supersede or are superseded.
DROP INDEX records_supersedes_idx;
DROP INDEX records_superseded_by_idx;
CREATE INDEX records_supersedes_idx ON records (supersedes) WHERE supersedes IS NOT NULL;
CREATE INDEX records_superseded_by_idx ON records (superseded_by) WHERE superseded_by IS NOT NULL;
