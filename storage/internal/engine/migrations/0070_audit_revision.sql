-- 0070_audit_revision: each audit row that names a record keeps the
-- record's revision as the row was written (after the change, for a row
-- that made one), so a record's history says who did what at which revision
-- (memory_history). Rows written before this migration, and rows that name
-- no record, hold NULL.

ALTER TABLE audit ADD COLUMN revision INTEGER;
