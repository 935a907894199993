-- The indexes of 0011's keys. Titles that are one under the new key (only
-- ones stored before look-alike keys existed can be) stay; a later one's
-- key ends in " DUPLICATE " and its id, as 0005 did.

CREATE INDEX index_users_on_screen_name_key ON users (screen_name_key);
CREATE INDEX index_users_on_screen_name_small_key ON users (screen_name_small_key);
CREATE INDEX index_users_on_screen_name_capitals_key ON users (screen_name_capitals_key);

UPDATE posts SET title_key = title_key || ' DUPLICATE ' || id
  WHERE id IN (SELECT d.id FROM (SELECT id, row_number() OVER (PARTITION BY title_key ORDER BY id) AS n FROM posts) AS d
               WHERE d.n > 1);
CREATE UNIQUE INDEX index_posts_on_title_key ON posts (title_key);
