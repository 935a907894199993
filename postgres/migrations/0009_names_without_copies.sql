-- The SQLite store's listings look up screen names and titles by id again
-- instead of keeping copies in posts and comments; this store never kept
-- them (its listings join). Kept so both stores' schemas share versions.
SELECT 1;
