-- The copies of 0007 stay right when another program replaces a row:
-- INSERT OR REPLACE (and REPLACE) of a user or a post deletes the row and
-- inserts it again, so no UPDATE trigger fires, and with foreign keys off
-- (the sqlite3 shell's and most drivers' default) the posts and comments
-- that point to it stay, keeping the old name or title. These triggers
-- copy a user's name and a post's title to the rows that point to them
-- when the user or post is inserted; for a new row they find none, one
-- probe of an index.

CREATE TRIGGER users_screen_name_copied_on_insert AFTER INSERT ON users
BEGIN
  UPDATE posts SET author_name = NEW.screen_name
    WHERE user_id = NEW.id AND author_name IS NOT NEW.screen_name COLLATE BINARY;
  UPDATE comments SET author_name = NEW.screen_name
    WHERE user_id = NEW.id AND author_name IS NOT NEW.screen_name COLLATE BINARY;
END;

CREATE TRIGGER posts_title_copied_on_insert AFTER INSERT ON posts
BEGIN
  UPDATE comments SET post_title = NEW.title
    WHERE post_id = NEW.id AND post_title IS NOT NEW.title;
END;
