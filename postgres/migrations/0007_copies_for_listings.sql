-- In step with SQLite's 0007_copies_for_listings.sql, where each post keeps
-- its author's screen name and each comment its author's screen name and
-- its post's title, because a SQLite read connection loses its whole page
-- cache whenever another connection commits, and a listing that joins then
-- fetches a page for each row it joins. PostgreSQL's buffer cache is shared
-- by every connection and survives commits, so the joined rows' pages stay
-- cached, and the listings join as before. Nothing to change.
SELECT 1;
