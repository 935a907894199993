package sqlite

import (
	"context"
	"time"

	"github.com/loremnews/loremnews/sqlitedb"
)

// Backup writes a consistent copy of the database to path while the site
// keeps running (on sqlitedb, its online backup: one snapshot, read while
// writers go on, paced and reported as opts say; nil: as fast as it can),
// and says how long it took.
func (db *DB) Backup(ctx context.Context, path string, opts *sqlitedb.BackupOptions) (time.Duration, error) {
	start := time.Now()
	if err := db.eng.Backup(ctx, path, opts); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}
