-- 0088_drop_namespace_created_at_idx: records_namespace_created_at_idx
-- (migration 0001) served no statement that another index does not serve
-- as well. The timeline walks records_namespace_status_timeline_idx (0071),
-- unused records records_status_timeline_idx, and a rename's range over
-- namespaces any index that leads with the namespace: the planner now
-- takes records_namespace_status_timeline_idx (TestRename_Plan). Every
-- store still paid a b-tree insert in it, and a rename an update of it; at
-- 100,000 records it held 3.6 MB. Measured with one build over the store
-- with and without it (alternated, 2-core machine), neither the store rate
-- nor status and timeline reads moved beyond the machine's noise: what it
-- gives back is the space and the work, not a rate.

DROP INDEX records_namespace_created_at_idx;
