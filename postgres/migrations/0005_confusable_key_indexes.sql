-- In step with SQLite's 0005_confusable_key_indexes.sql: the keys of 0004,
-- filled in by then, unique, so a look-alike of a stored screen name or
-- title is refused as taken ("Screen name has already been taken.",
-- "Title has already been taken." — errors.go maps these constraints), by
-- the database, so two creates at once cannot both pass.
--
-- Rows stored before 0004 may already look alike, and opening the
-- database must not fail on them. The oldest row (lowest id) of each key
-- keeps it; every later one gets its key followed by ' DUPLICATE ' and its
-- own id. No real key can equal that: a key is case-folded, so it never
-- holds the capitals of "DUPLICATE", and ids are unique. Those rows stay as
-- they are, and the store keeps such a key while the name or title stays
-- the same, so their owners can still edit the rest; a new name or title
-- gets its own key, and must not look like anyone else's.
--
-- The constraints are DEFERRABLE (INITIALLY IMMEDIATE: every statement is
-- checked as it ends) for one reason: ImportStream defers them, copies a
-- data set that may hold such look-alikes, and gives the later ones these
-- same keys (dedupeKeys in dataset.go) before they are checked.

UPDATE users SET screen_name_key = screen_name_key || ' DUPLICATE ' || id
  WHERE id IN (SELECT d.id FROM (SELECT id, row_number() OVER (PARTITION BY screen_name_key ORDER BY id) AS n FROM users) AS d
               WHERE d.n > 1);
UPDATE posts SET title_key = title_key || ' DUPLICATE ' || id
  WHERE id IN (SELECT d.id FROM (SELECT id, row_number() OVER (PARTITION BY title_key ORDER BY id) AS n FROM posts) AS d
               WHERE d.n > 1);

ALTER TABLE users ALTER COLUMN screen_name_key SET NOT NULL,
  ADD CONSTRAINT index_users_on_screen_name_key UNIQUE (screen_name_key) DEFERRABLE INITIALLY IMMEDIATE;
ALTER TABLE posts ALTER COLUMN title_key SET NOT NULL,
  ADD CONSTRAINT index_posts_on_title_key UNIQUE (title_key) DEFERRABLE INITIALLY IMMEDIATE;
