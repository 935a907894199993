-- The first schema of Lorem News. AUTOINCREMENT keeps SQLite from reusing the
-- id of a deleted row, so a link to a deleted post never shows a new one.
-- Text length checks repeat the domain rules as a last line of defence.

CREATE TABLE users (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  screen_name     TEXT    NOT NULL COLLATE NOCASE,
  password_digest TEXT    NOT NULL,
  about           TEXT    NOT NULL DEFAULT '',
  last_seen_at    DATETIME,
  posts_count     INTEGER NOT NULL DEFAULT 0,
  created_at      DATETIME NOT NULL,
  updated_at      DATETIME NOT NULL
);
-- NOCASE: "Alice" and "alice" are the same person to readers.
CREATE UNIQUE INDEX index_users_on_screen_name ON users (screen_name);

CREATE TABLE posts (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id        INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  title          TEXT    NOT NULL CHECK (length(title) >= 5),
  description    TEXT    NOT NULL DEFAULT '',
  published_at   DATETIME,
  comments_count INTEGER NOT NULL DEFAULT 0,
  created_at     DATETIME NOT NULL,
  updated_at     DATETIME NOT NULL
);
CREATE INDEX index_posts_on_user_id ON posts (user_id);
CREATE UNIQUE INDEX index_posts_on_title ON posts (title);

CREATE TABLE comments (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  post_id    INTEGER NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
  user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  body       TEXT    NOT NULL CHECK (length(body) >= 5),
  created_at DATETIME NOT NULL,
  updated_at DATETIME NOT NULL
);
-- Both indexes end in the rowid, so "newest first" (ORDER BY id DESC) is an
-- index scan, not a sort.
CREATE INDEX index_comments_on_post_id ON comments (post_id);
CREATE INDEX index_comments_on_user_id ON comments (user_id);

-- One row per signed-in browser. The browser keeps a random token; only its
-- SHA-256 digest is stored, so a copy of the database signs no one in.
CREATE TABLE sessions (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id      INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  token_digest BLOB    NOT NULL,
  user_agent   TEXT    NOT NULL DEFAULT '',
  ip_address   TEXT    NOT NULL DEFAULT '',
  created_at   DATETIME NOT NULL,
  updated_at   DATETIME NOT NULL
);
CREATE UNIQUE INDEX index_sessions_on_token_digest ON sessions (token_digest);
CREATE INDEX index_sessions_on_user_id ON sessions (user_id);
