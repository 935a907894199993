-- Look-alike screen names and titles (a security finding): "Ieo5" (a
-- capital i) beside "leo5", "rnagna4" beside "magna4", a title copied with
-- a double space, in lower case, or with a Cyrillic а, е or о. Each user
-- and post keeps the key it is compared by, loremnews.ConfusableKey: the
-- Unicode confusable skeleton (UTS #39) of the case-folded text, each run
-- of white space one space, none at either end. 0005 makes the keys
-- unique, so two look-alikes can never both be stored, however close
-- together they come.
--
-- The store computes the key in Go on every insert and on every change of
-- the name or title. Here loremnews_skeleton, which the migrator registers
-- from Go (sqlite/migrate.go), is that same function, so the rows already
-- stored get the very keys new ones would. SQLite needs a default to add a
-- NOT NULL column; no row keeps the ''.

ALTER TABLE users ADD COLUMN screen_name_key TEXT NOT NULL DEFAULT '';
ALTER TABLE posts ADD COLUMN title_key TEXT NOT NULL DEFAULT '';
UPDATE users SET screen_name_key = loremnews_skeleton(screen_name);
UPDATE posts SET title_key = loremnews_skeleton(title);
