package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"time"
)

// Backup writes a consistent copy of the database to path with VACUUM INTO,
// while the site keeps running: it reads one snapshot in a read
// transaction (WAL lets writers go on meanwhile) and writes a compact,
// checkpointed file. It uses a connection of its own, because the read pool
// is query_only (which forbids VACUUM INTO) and borrowing the one write
// connection would stall every writer for the whole copy.
func (db *DB) Backup(ctx context.Context, path string) (time.Duration, error) {
	start := time.Now()
	if _, err := os.Stat(path); err == nil {
		return 0, fmt.Errorf("backup: %s already exists; choose a new file", path)
	}
	conn := sql.OpenDB(newConnector(db.path, nil, 5*time.Second, "deferred", db.spec.pragmas))
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `VACUUM INTO ?`, path); err != nil {
		os.Remove(path)
		return 0, fmt.Errorf("backup to %s: %w", path, err)
	}
	return time.Since(start), nil
}
