-- Pages look up screen names and titles by id again; posts and comments
-- no longer keep copies of them (0007 and 0008 are undone).
--
-- Why: a copy inside a row is rewritten with the row. One rename rewrote
-- every post and comment of its author, bodies and all, and one retitle
-- every comment of its post, in the request's write transaction: with
-- 3,000 comments, 150 MB written and 600 ms during which no other write
-- could run, and without bound as the rows grow.
--
-- The listings keep what the copies bought (their rows from one range of
-- one index, no page of users or posts fetched per row) with a cache of
-- names and titles by id in the program (names.go). name_changes tells
-- every process on the file which ids to forget: triggers append the id of
-- a user whose screen name changed and of a post whose title changed,
-- whoever writes (this program, the sqlite3 shell, a script). Before its
-- page, a reader compares name_changes' highest seq with the one its cache
-- was last brought up to and forgets the ids appended since. Only the last
-- 1,000 changes are kept; a cache further behind forgets everything.

DROP TRIGGER users_screen_name_copied;
DROP TRIGGER posts_title_copied;
DROP TRIGGER posts_author_name_filled;
DROP TRIGGER posts_author_moved;
DROP TRIGGER comments_copies_filled;
DROP TRIGGER comments_copies_moved;
DROP TRIGGER users_screen_name_copied_on_insert;
DROP TRIGGER posts_title_copied_on_insert;

DROP INDEX index_posts_listing;
DROP INDEX index_comments_on_post_id;
DROP INDEX index_comments_on_user_id;
ALTER TABLE posts DROP COLUMN author_name;
ALTER TABLE comments DROP COLUMN author_name;
ALTER TABLE comments DROP COLUMN post_title;
-- The listings' covering indexes as 0002 made them.
CREATE INDEX index_posts_listing ON posts (id, user_id, title, comments_count, created_at);
CREATE INDEX index_comments_on_post_id ON comments (post_id, id, user_id, created_at, body);
CREATE INDEX index_comments_on_user_id ON comments (user_id, id, post_id, created_at, body);

CREATE TABLE name_changes (
  seq     INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id INTEGER, -- a user whose screen name may have changed, or NULL
  post_id INTEGER  -- a post whose title may have changed, or NULL
);

-- The log keeps its last 1,000 changes (a few pages).
CREATE TRIGGER name_changes_trimmed AFTER INSERT ON name_changes
BEGIN
  DELETE FROM name_changes WHERE seq <= NEW.seq - 1000;
END;

-- screen_name compares without case (COLLATE NOCASE): "Alice" to "alice"
-- is a change to show. A new id (another program's UPDATE of the key)
-- changes what both ids name.
CREATE TRIGGER users_renamed AFTER UPDATE OF id, screen_name ON users
  WHEN NEW.screen_name IS NOT OLD.screen_name COLLATE BINARY OR NEW.id IS NOT OLD.id
BEGIN
  INSERT INTO name_changes (user_id) VALUES (OLD.id);
  INSERT INTO name_changes (user_id) SELECT NEW.id WHERE NEW.id IS NOT OLD.id;
END;

CREATE TRIGGER posts_retitled AFTER UPDATE OF id, title ON posts
  WHEN NEW.title IS NOT OLD.title OR NEW.id IS NOT OLD.id
BEGIN
  INSERT INTO name_changes (post_id) VALUES (OLD.id);
  INSERT INTO name_changes (post_id) SELECT NEW.id WHERE NEW.id IS NOT OLD.id;
END;

-- A deleted user or post is logged too: a data set loaded again (seed)
-- gives its ids to other rows.
CREATE TRIGGER users_deleted AFTER DELETE ON users
BEGIN
  INSERT INTO name_changes (user_id) VALUES (OLD.id);
END;

CREATE TRIGGER posts_deleted AFTER DELETE ON posts
BEGIN
  INSERT INTO name_changes (post_id) VALUES (OLD.id);
END;

-- INSERT OR REPLACE (REPLACE) by another program deletes the rows the new
-- one conflicts with and fires no UPDATE or (with recursive triggers off)
-- DELETE trigger: the rows it is about to replace are logged first. A
-- plain insert finds none.
CREATE TRIGGER users_replaced BEFORE INSERT ON users
BEGIN
  INSERT INTO name_changes (user_id)
    SELECT id FROM users WHERE id = NEW.id OR screen_name = NEW.screen_name OR screen_name_key = NEW.screen_name_key;
END;

CREATE TRIGGER posts_replaced BEFORE INSERT ON posts
BEGIN
  INSERT INTO name_changes (post_id)
    SELECT id FROM posts WHERE id = NEW.id OR title = NEW.title OR title_key = NEW.title_key;
END;
