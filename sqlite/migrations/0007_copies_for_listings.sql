-- Each post keeps its author's screen name, and each comment its author's
-- screen name and its post's title, so that a listing reads its rows from
-- one range of one index and nothing else.
--
-- Why: a read connection's page cache is emptied whenever another
-- connection has committed, so every page a request touches is fetched
-- again. A listing that joins fetches, for each of its rows, the page of
-- the row it joins: the front page's 100 authors, a user's page's titles
-- of the posts their 100 comments are on, a post page's commenters. Once
-- the tables are large those rows are spread over as many pages as there
-- are rows (a post fills most of a page), so with 100 times the data a
-- request fetched about three times the pages. With the copies in the
-- listings' covering indexes, the rows and what they show sit together.
--
-- The triggers keep the copies right whoever writes: a renamed user or a
-- retitled post is copied to its rows in the same statement, by this
-- program or any other on the file (the sqlite3 shell, a script). The
-- program's own inserts fill the copies in the INSERT itself; a row
-- inserted without them (another program's, which does not know the
-- columns) gets them from a trigger. CheckConsistency counts any copy that
-- differs from its original.

ALTER TABLE posts ADD COLUMN author_name TEXT NOT NULL DEFAULT '';
ALTER TABLE comments ADD COLUMN author_name TEXT NOT NULL DEFAULT '';
ALTER TABLE comments ADD COLUMN post_title TEXT NOT NULL DEFAULT '';

UPDATE posts SET author_name = coalesce((SELECT screen_name FROM users WHERE users.id = posts.user_id), '');
UPDATE comments SET
  author_name = coalesce((SELECT screen_name FROM users WHERE users.id = comments.user_id), ''),
  post_title = coalesce((SELECT title FROM posts WHERE posts.id = comments.post_id), '');

-- The listings' covering indexes of 0002, now with the copies.
DROP INDEX index_posts_listing;
CREATE INDEX index_posts_listing ON posts (id, user_id, author_name, title, comments_count, created_at);
DROP INDEX index_comments_on_post_id;
CREATE INDEX index_comments_on_post_id ON comments (post_id, id, user_id, author_name, created_at, body);
DROP INDEX index_comments_on_user_id;
CREATE INDEX index_comments_on_user_id ON comments (user_id, id, post_id, post_title, created_at, body);

-- screen_name compares without case (COLLATE NOCASE); a rename from
-- "Alice" to "alice" is still a rename to show.
CREATE TRIGGER users_screen_name_copied AFTER UPDATE OF screen_name ON users
  WHEN NEW.screen_name IS NOT OLD.screen_name COLLATE BINARY
BEGIN
  UPDATE posts SET author_name = NEW.screen_name WHERE user_id = NEW.id;
  UPDATE comments SET author_name = NEW.screen_name WHERE user_id = NEW.id;
END;

CREATE TRIGGER posts_title_copied AFTER UPDATE OF title ON posts
  WHEN NEW.title IS NOT OLD.title
BEGIN
  UPDATE comments SET post_title = NEW.title WHERE post_id = NEW.id;
END;

CREATE TRIGGER posts_author_name_filled AFTER INSERT ON posts
  WHEN NEW.author_name IS NOT (SELECT screen_name FROM users WHERE id = NEW.user_id) COLLATE BINARY
BEGIN
  UPDATE posts SET author_name = coalesce((SELECT screen_name FROM users WHERE id = NEW.user_id), '')
    WHERE id = NEW.id;
END;

CREATE TRIGGER posts_author_moved AFTER UPDATE OF user_id, author_name ON posts
  WHEN NEW.author_name IS NOT (SELECT screen_name FROM users WHERE id = NEW.user_id) COLLATE BINARY
BEGIN
  UPDATE posts SET author_name = coalesce((SELECT screen_name FROM users WHERE id = NEW.user_id), '')
    WHERE id = NEW.id;
END;

CREATE TRIGGER comments_copies_filled AFTER INSERT ON comments
  WHEN NEW.author_name IS NOT (SELECT screen_name FROM users WHERE id = NEW.user_id) COLLATE BINARY
    OR NEW.post_title IS NOT (SELECT title FROM posts WHERE id = NEW.post_id)
BEGIN
  UPDATE comments SET
    author_name = coalesce((SELECT screen_name FROM users WHERE id = NEW.user_id), ''),
    post_title = coalesce((SELECT title FROM posts WHERE id = NEW.post_id), '')
    WHERE id = NEW.id;
END;

CREATE TRIGGER comments_copies_moved AFTER UPDATE OF user_id, post_id, author_name, post_title ON comments
  WHEN NEW.author_name IS NOT (SELECT screen_name FROM users WHERE id = NEW.user_id) COLLATE BINARY
    OR NEW.post_title IS NOT (SELECT title FROM posts WHERE id = NEW.post_id)
BEGIN
  UPDATE comments SET
    author_name = coalesce((SELECT screen_name FROM users WHERE id = NEW.user_id), ''),
    post_title = coalesce((SELECT title FROM posts WHERE id = NEW.post_id), '')
    WHERE id = NEW.id;
END;
