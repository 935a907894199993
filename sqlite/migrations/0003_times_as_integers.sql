-- migrate: foreign keys off
--
-- Times as INTEGER Unix nanoseconds instead of DATETIME text (see
-- times.go). SQLite cannot change a column's type in place, so each table
-- is rebuilt as https://sqlite.org/lang_altertable.html#otheralter says:
-- create the new table, copy the rows, drop the old table, rename the new
-- one, create its indexes again. That needs foreign keys off (the migrator
-- turns them off for a migration that starts with the line above, and runs
-- PRAGMA foreign_key_check before it commits): with them on, dropping
-- users would delete every post, comment and session (ON DELETE CASCADE).
--
-- loremnews_unix_nanos is the migrator's: it reads a DATETIME text exactly
-- as the driver read it (the same layouts, in the same order), so every
-- time converts to the instant the application saw, and it fails the
-- migration on a text that is not a time rather than guessing.

CREATE TABLE users_new (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  screen_name     TEXT    NOT NULL COLLATE NOCASE,
  password_digest TEXT    NOT NULL,
  about           TEXT    NOT NULL DEFAULT '',
  last_seen_at    INTEGER,
  posts_count     INTEGER NOT NULL DEFAULT 0,
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL
);
INSERT INTO users_new (id, screen_name, password_digest, about, last_seen_at, posts_count, created_at, updated_at)
  SELECT id, screen_name, password_digest, about, loremnews_unix_nanos(last_seen_at), posts_count,
         loremnews_unix_nanos(created_at), loremnews_unix_nanos(updated_at)
  FROM users;

CREATE TABLE posts_new (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id        INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  title          TEXT    NOT NULL CHECK (length(title) >= 5),
  description    TEXT    NOT NULL DEFAULT '',
  published_at   INTEGER,
  comments_count INTEGER NOT NULL DEFAULT 0,
  created_at     INTEGER NOT NULL,
  updated_at     INTEGER NOT NULL
);
INSERT INTO posts_new (id, user_id, title, description, published_at, comments_count, created_at, updated_at)
  SELECT id, user_id, title, description, loremnews_unix_nanos(published_at), comments_count,
         loremnews_unix_nanos(created_at), loremnews_unix_nanos(updated_at)
  FROM posts;

CREATE TABLE comments_new (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  post_id    INTEGER NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
  user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  body       TEXT    NOT NULL CHECK (length(body) >= 5),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
INSERT INTO comments_new (id, post_id, user_id, body, created_at, updated_at)
  SELECT id, post_id, user_id, body, loremnews_unix_nanos(created_at), loremnews_unix_nanos(updated_at)
  FROM comments;

CREATE TABLE sessions_new (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id      INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  token_digest BLOB    NOT NULL,
  user_agent   TEXT    NOT NULL DEFAULT '',
  ip_address   TEXT    NOT NULL DEFAULT '',
  created_at   INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL
);
INSERT INTO sessions_new (id, user_id, token_digest, user_agent, ip_address, created_at, updated_at)
  SELECT id, user_id, token_digest, user_agent, ip_address, loremnews_unix_nanos(created_at), loremnews_unix_nanos(updated_at)
  FROM sessions;

-- AUTOINCREMENT's high-water marks move with the rows: an id that was
-- deleted must stay deleted (a link to it answers 410, never a new row).
INSERT INTO sqlite_sequence (name, seq)
  SELECT name || '_new', 0 FROM sqlite_sequence
  WHERE name IN ('users', 'posts', 'comments', 'sessions')
    AND name || '_new' NOT IN (SELECT name FROM sqlite_sequence);
UPDATE sqlite_sequence AS n
  SET seq = max(n.seq, (SELECT o.seq FROM sqlite_sequence o WHERE o.name || '_new' = n.name))
  WHERE n.name IN ('users_new', 'posts_new', 'comments_new', 'sessions_new')
    AND EXISTS (SELECT 1 FROM sqlite_sequence o WHERE o.name || '_new' = n.name);

DROP TABLE comments;
DROP TABLE sessions;
DROP TABLE posts;
DROP TABLE users;
ALTER TABLE users_new RENAME TO users;
ALTER TABLE posts_new RENAME TO posts;
ALTER TABLE comments_new RENAME TO comments;
ALTER TABLE sessions_new RENAME TO sessions;

-- The indexes of migrations 0001 and 0002, on the new tables.
CREATE UNIQUE INDEX index_users_on_screen_name ON users (screen_name);
CREATE UNIQUE INDEX index_posts_on_title ON posts (title);
CREATE INDEX index_posts_listing ON posts (id, user_id, title, comments_count, created_at);
CREATE INDEX index_posts_on_user_id ON posts (user_id, id, title, comments_count, created_at);
CREATE INDEX index_comments_on_post_id ON comments (post_id, id, user_id, created_at, body);
CREATE INDEX index_comments_on_user_id ON comments (user_id, id, post_id, created_at, body);
CREATE UNIQUE INDEX index_sessions_on_token_digest ON sessions (token_digest);
CREATE INDEX index_sessions_on_user_id ON sessions (user_id);
