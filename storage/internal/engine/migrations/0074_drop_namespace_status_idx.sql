-- 0074_drop_namespace_status_idx: records_namespace_status_timeline_idx
-- (migration 0072) begins with the columns of records_namespace_status_idx
-- (migration 0001), namespace then status, so it serves every lookup the
-- older index served; keeping both cost every write of a record an index
-- update for nothing.

DROP INDEX records_namespace_status_idx;
