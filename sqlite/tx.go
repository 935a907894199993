package sqlite

import "context"

// read runs fn's queries in one read transaction on a read connection:
// one snapshot for the whole page, and one start of a read transaction
// instead of one per query. The latter matters because a connection drops
// its whole page cache when its read transaction starts after another
// connection committed — here, nearly always — so separate queries would
// each read the shared pages (b-tree roots, the users table) again.
func (db *DB) read(ctx context.Context, fn func(ctx context.Context, q Querier) error) error {
	return mapError(db.eng.Read(ctx, fn))
}

// write runs fn in one write transaction (BEGIN IMMEDIATE … COMMIT in every
// setup but naive), after this process's earlier writes in the setups
// that queue them, and returns once it has committed.
func (db *DB) write(ctx context.Context, fn func(ctx context.Context, tx Execer) error) error {
	return mapError(db.eng.Write(ctx, fn))
}

// coalesce is write for a write that cannot fail on its own (a touch):
// where the engine can, those queued at one moment share a commit.
func (db *DB) coalesce(ctx context.Context, fn func(ctx context.Context, tx Execer) error) error {
	return mapError(db.eng.Coalesce(ctx, fn))
}
