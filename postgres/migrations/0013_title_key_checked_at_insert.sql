-- The title key's unique constraint is checked as each row is inserted,
-- no longer DEFERRABLE. PostgreSQL checks a deferrable unique constraint
-- after the statement has inserted its row: two transactions that insert
-- look-alike titles at the same moment each insert theirs, then each waits
-- for the other to end, a deadlock PostgreSQL breaks after a second by
-- aborting one of them; with several at once, the one started over could
-- meet the next, again and again. Checked at the insert, the second waits
-- for the first transaction to end, then is refused as taken.
-- ImportStream, which deferred the constraint to copy a data set that may
-- hold look-alike titles, now drops it for the copy and adds it back.

ALTER TABLE posts DROP CONSTRAINT index_posts_on_title_key;
ALTER TABLE posts ADD CONSTRAINT index_posts_on_title_key UNIQUE (title_key);
