-- Covering indexes for the listings. Nearly every request commits (each
-- benchmarking request touches a user), and a read connection empties its
-- page cache whenever another connection has committed since its last read,
-- so every page a listing touches is read again from the OS (pread, a 4 KiB
-- copy). A listing of 100 posts walked ~100 table pages (a seeded post
-- fills most of a page); these indexes hold just the listed columns, in
-- listing order, so the same rows sit in a handful of index pages.

-- Front page and "posts from #id": id order.
CREATE INDEX index_posts_listing ON posts (id, user_id, title, comments_count, created_at);
-- A user's page, newest first (still serves the foreign key's lookups).
DROP INDEX index_posts_on_user_id;
CREATE INDEX index_posts_on_user_id ON posts (user_id, id, title, comments_count, created_at);
-- A user's comments with their posts' titles, newest first.
DROP INDEX index_comments_on_user_id;
CREATE INDEX index_comments_on_user_id ON comments (user_id, id, post_id, created_at, body);
-- A post's comments, newest first.
DROP INDEX index_comments_on_post_id;
CREATE INDEX index_comments_on_post_id ON comments (post_id, id, user_id, created_at, body);
