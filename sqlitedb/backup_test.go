package sqlitedb_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/loremnews/loremnews/sqlitedb"
)

// Backup writes a whole, consistent copy while writes go on, and refuses
// to overwrite a file.
func TestBackupWhileWriting(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t, nil)
	createT(t, db)
	for i := range 100 {
		mustExec(t, db, `INSERT INTO t (n) VALUES (?)`, i)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 100; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := db.Write(ctx, insert(i)); err != nil {
				t.Errorf("a write during the backup: %v", err)
				return
			}
		}
	})
	path := filepath.Join(t.TempDir(), "backup.db")
	err := db.Backup(ctx, path)
	close(stop)
	waitGroup(t, &wg, "the writes to stop")
	if err != nil {
		t.Fatalf("backup: %v", err)
	}
	if err := db.Backup(ctx, path); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("a backup onto an existing file: %v, want it refused", err)
	}

	backup, err := sqlitedb.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer backup.Close()
	if got := queryInt(t, backup, `SELECT count(*) FROM pragma_integrity_check WHERE integrity_check != 'ok'`); got != 0 {
		t.Fatal("the backup fails its integrity check")
	}
	// One snapshot: the rows 0 … n-1, none missing, for some n ≥ 100.
	n := queryInt(t, backup, `SELECT count(*) FROM t`)
	if last := queryInt(t, backup, `SELECT max(n) FROM t`); n < 100 || last != n-1 {
		t.Fatalf("the backup holds %d rows up to %d; want a prefix of the writes, at least the first 100", n, last)
	}
}
