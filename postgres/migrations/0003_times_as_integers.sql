-- In step with SQLite's 0003_times_as_integers.sql: every time is a bigint
-- of Unix nanoseconds, the form both stores read and write (see times.go).
-- timestamptz holds microseconds and extract(epoch ...) gives them exactly
-- as a numeric, so every time converts to the same instant. PostgreSQL
-- changes a column's type in place, rewriting the table and its indexes.
ALTER TABLE users
  ALTER COLUMN last_seen_at TYPE bigint USING (extract(epoch FROM last_seen_at) * 1000000000)::bigint,
  ALTER COLUMN created_at   TYPE bigint USING (extract(epoch FROM created_at) * 1000000000)::bigint,
  ALTER COLUMN updated_at   TYPE bigint USING (extract(epoch FROM updated_at) * 1000000000)::bigint;
ALTER TABLE posts
  ALTER COLUMN published_at TYPE bigint USING (extract(epoch FROM published_at) * 1000000000)::bigint,
  ALTER COLUMN created_at   TYPE bigint USING (extract(epoch FROM created_at) * 1000000000)::bigint,
  ALTER COLUMN updated_at   TYPE bigint USING (extract(epoch FROM updated_at) * 1000000000)::bigint;
ALTER TABLE comments
  ALTER COLUMN created_at TYPE bigint USING (extract(epoch FROM created_at) * 1000000000)::bigint,
  ALTER COLUMN updated_at TYPE bigint USING (extract(epoch FROM updated_at) * 1000000000)::bigint;
ALTER TABLE sessions
  ALTER COLUMN created_at TYPE bigint USING (extract(epoch FROM created_at) * 1000000000)::bigint,
  ALTER COLUMN updated_at TYPE bigint USING (extract(epoch FROM updated_at) * 1000000000)::bigint;
