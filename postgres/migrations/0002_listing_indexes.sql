-- In step with SQLite's 0002_listing_indexes.sql, which adds covering
-- indexes for the listings because a SQLite read connection loses its whole
-- page cache whenever another connection commits. PostgreSQL's buffer cache
-- is shared by every connection and survives commits, so the listings'
-- table pages stay cached; and putting comments_count in an index would
-- stop its updates from being HOT (heap-only) updates. Nothing to change.
SELECT 1;
