package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/loremnews/loremnews/pgcluster/pgtest"
)

// TestWriteObservesItsWaitOnce: a write started over still reports one
// wait, its first attempt's, and each start-over counts as a retry.
func TestWriteObservesItsWaitOnce(t *testing.T) {
	var waits []time.Duration
	db, err := Open(context.Background(), Config{URL: pgtest.NewDatabase(t), OnWriteWait: func(d time.Duration) { waits = append(waits, d) }})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	waits = nil // opening migrates outside write; count only what follows
	attempts := 0
	err = db.write(context.Background(), func(ctx context.Context, tx pgx.Tx) error {
		if attempts++; attempts < 3 {
			return errRetry
		}
		_, err := tx.Exec(ctx, `SELECT 1`)
		return err
	})
	if err != nil || attempts != 3 {
		t.Fatalf("write: %v after %d attempts, want success on the third", err, attempts)
	}
	if len(waits) != 1 || db.Stats().Retries != 2 {
		t.Fatalf("%d waits observed and %d retries, want 1 and 2", len(waits), db.Stats().Retries)
	}
}
