package sqlite

import (
	"context"
	"time"
)

// Backup writes a consistent copy of the database to path with VACUUM
// INTO while the site keeps running (sqlitedb.DB.Backup): one snapshot,
// read while writers go on, into a compact, checkpointed file.
func (db *DB) Backup(ctx context.Context, path string) (time.Duration, error) {
	start := time.Now()
	if err := db.eng.backup(ctx, path); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}
