-- In step with SQLite's 0004_confusable_keys.sql: each user and post keeps
-- the key it is compared by against look-alikes ("Ieo5" beside "leo5",
-- "rnagna4" beside "magna4", a title copied with a double space, in lower
-- case, or with a Cyrillic а, е or о), loremnews.ConfusableKey: the
-- Unicode confusable skeleton (UTS #39) of the case-folded text, each run
-- of white space one space, none at either end. 0005 makes the keys unique
-- and NOT NULL.
--
-- The key is computed in Go, by the store on every insert and change of
-- the name or title, and for the rows already stored by fillConfusableKeys
-- (postgres/migrate.go), which the migrator runs right after this file, in
-- the same transaction as every migration.

ALTER TABLE users ADD COLUMN screen_name_key text;
ALTER TABLE posts ADD COLUMN title_key text;
