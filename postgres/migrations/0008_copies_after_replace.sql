-- In step with SQLite's 0008_copies_after_replace.sql, which keeps SQLite's
-- copies of names and titles right when another program replaces a user or
-- a post (INSERT OR REPLACE). PostgreSQL keeps no copies (see 0007), and
-- has no REPLACE. Nothing to change.
SELECT 1;
