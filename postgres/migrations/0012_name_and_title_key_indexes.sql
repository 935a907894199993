-- As SQLite's 0012_name_and_title_key_indexes.sql.

CREATE INDEX index_users_on_screen_name_key ON users (screen_name_key);
CREATE INDEX index_users_on_screen_name_small_key ON users (screen_name_small_key);
CREATE INDEX index_users_on_screen_name_capitals_key ON users (screen_name_capitals_key);

UPDATE posts SET title_key = title_key || ' DUPLICATE ' || id
  WHERE id IN (SELECT d.id FROM (SELECT id, row_number() OVER (PARTITION BY title_key ORDER BY id) AS n FROM posts) AS d
               WHERE d.n > 1);
ALTER TABLE posts ADD CONSTRAINT index_posts_on_title_key UNIQUE (title_key) DEFERRABLE INITIALLY IMMEDIATE;
