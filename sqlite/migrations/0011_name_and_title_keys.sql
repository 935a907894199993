-- Screen names are refused when they read as another account's name, as
-- they are shown (loremnews.NameKeys), rather than by one key of the
-- name folded to small letters, which refused ordinary names ("sami"
-- beside "sam1", "ian" beside "lan") and let look-alikes through
-- ("vvendy" beside "wendy", "5AM5ON" beside "samson"). A user keeps three
-- keys: the skeleton of the name as shown, in small letters and in
-- capitals; a new name is refused when its shown key is one of another
-- user's three or one of its own is another's shown key. That is not one
-- unique index: the store checks it in the write transaction, which is
-- the only writer at that moment, so no two requests pass it together.
--
-- Titles are not identities: a title is refused only when it is a taken
-- one in another case, spacing or compatibility form (loremnews.TitleKey).
--
-- This migration adds the columns and keys every row; 0012 indexes them.

ALTER TABLE users ADD COLUMN screen_name_small_key TEXT NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN screen_name_capitals_key TEXT NOT NULL DEFAULT '';
DROP INDEX index_users_on_screen_name_key;
UPDATE users SET
  screen_name_key = loremnews_name_key(screen_name, 0),
  screen_name_small_key = loremnews_name_key(screen_name, 1),
  screen_name_capitals_key = loremnews_name_key(screen_name, 2);

DROP INDEX index_posts_on_title_key;
UPDATE posts SET title_key = loremnews_title_key(title);
