-- As SQLite's 0011_name_and_title_keys.sql, which says why: three keys per
-- screen name, checked by the store (under a transaction-level advisory
-- lock, so no two name changes pass the check together), and titles keyed
-- by loremnews.TitleKey. The keys are computed in Go right after this
-- (fillNameAndTitleKeys); 0012 indexes them.

ALTER TABLE users ADD COLUMN screen_name_small_key text NOT NULL DEFAULT '',
  ADD COLUMN screen_name_capitals_key text NOT NULL DEFAULT '';
ALTER TABLE users DROP CONSTRAINT index_users_on_screen_name_key;
ALTER TABLE posts DROP CONSTRAINT index_posts_on_title_key;
