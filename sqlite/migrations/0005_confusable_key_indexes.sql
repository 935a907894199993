-- The keys of 0004, unique: a look-alike of a stored screen name or title
-- is refused as taken ("Screen name has already been taken.", "Title has
-- already been taken."), by the database, so two creates at once cannot
-- both pass.
--
-- Rows stored before 0004 may already look alike, and opening the
-- database must not fail on them. The oldest row (lowest id) of each key
-- keeps it; every later one gets its key followed by ' DUPLICATE ' and its
-- own id. No real key can equal that: a key is case-folded, so it never
-- holds the capitals of "DUPLICATE", and ids are unique. Those rows stay as
-- they are, and the store keeps such a key while the name or title stays
-- the same, so their owners can still edit the rest; a new name or title
-- gets its own key, and must not look like anyone else's. Imports
-- (ImportStream) give the later look-alikes of a data set the same keys.
-- The PostgreSQL twin does the same.

UPDATE users SET screen_name_key = screen_name_key || ' DUPLICATE ' || id
  WHERE id IN (SELECT d.id FROM (SELECT id, row_number() OVER (PARTITION BY screen_name_key ORDER BY id) AS n FROM users) AS d
               WHERE d.n > 1);
UPDATE posts SET title_key = title_key || ' DUPLICATE ' || id
  WHERE id IN (SELECT d.id FROM (SELECT id, row_number() OVER (PARTITION BY title_key ORDER BY id) AS n FROM posts) AS d
               WHERE d.n > 1);

CREATE UNIQUE INDEX index_users_on_screen_name_key ON users (screen_name_key);
CREATE UNIQUE INDEX index_posts_on_title_key ON posts (title_key);
