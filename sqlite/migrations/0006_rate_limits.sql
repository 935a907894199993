-- The account-wide rate limits (failed sign-ins, password checks, posts,
-- comments and edits per account; see docs/security.md) are counted here
-- rather than in each process's memory, so every process serving this
-- file shares them and a restart or a deploy does not reset them.
--
-- key is the web layer's SHA-256 digest of the limit and what it counts
-- by (an account, an account and an address): nothing personal in clear.
-- attempts is the count taken in the window that ends at window_end (Unix
-- nanoseconds, as every time here). A row whose window has ended counts
-- nothing: the next attempt starts a new window over it, and the store
-- deletes such rows a few at a time (by window_end, hence the index).
-- The PostgreSQL twin is the same table.

CREATE TABLE rate_limits (
  key        BLOB    NOT NULL PRIMARY KEY CHECK (length(key) = 32),
  attempts   INTEGER NOT NULL CHECK (attempts >= 0),
  window_end INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX index_rate_limits_on_window_end ON rate_limits (window_end);
