-- 0086_drop_type_status_idx: records_type_status_idx (migration 0050) was
-- made for the counts by type and status that memory_status, the page and
-- every metrics scrape report. Those now read type_status_counts (0073),
-- which triggers keep in the same transaction as the record, and the
-- timeline's type filter keeps the planner off the index (timeline.go): no
-- statement reads it any more. Every store still paid a b-tree insert in
-- it, and a group of stores of several types a leaf page for each type in
-- the commit.

DROP INDEX records_type_status_idx;
