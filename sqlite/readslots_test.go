package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loremnews/loremnews/sqlite"
)

// Reads take one of ReadConns slots before they touch the read pool: never
// more at once than there are read connections, and a read waiting for a
// slot leaves when its request does.
func TestReadSlots(t *testing.T) {
	const conns = 3
	db, err := sqlite.Open(context.Background(), sqlite.Config{DSN: filepath.Join(t.TempDir(), "slots.sqlite3"), ReadConns: conns})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	t.Run("NeverMoreThanTheReadConnections", func(t *testing.T) {
		var inside, most, done atomic.Int64
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 50 {
					err := db.ReadForTest(context.Background(), func() error {
						n := inside.Add(1)
						for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
						}
						time.Sleep(50 * time.Microsecond) // stay inside long enough to overlap the others
						inside.Add(-1)
						return nil
					})
					if err != nil {
						t.Errorf("read: %v", err)
						return
					}
					done.Add(1)
				}
			}()
		}
		wg.Wait()
		if done.Load() != 16*50 {
			t.Errorf("%d reads done, want %d", done.Load(), 16*50)
		}
		if most.Load() > conns {
			t.Errorf("%d reads inside at once, more than the %d read connections", most.Load(), conns)
		}
	})

	t.Run("AWaitingReadLeavesWithItsRequest", func(t *testing.T) {
		var leaves []func()
		for range conns {
			leave, err := db.EnterReadForTest(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			leaves = append(leaves, leave)
		}
		// Every slot is held: a read whose request goes away gives up.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := db.EnterReadForTest(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("enter with every slot held and the request gone: %v, want context.Canceled", err)
		}
		// A freed slot goes to the next read.
		leaves[0]()
		leave, err := db.EnterReadForTest(context.Background())
		if err != nil {
			t.Fatalf("enter after a slot was freed: %v", err)
		}
		leave()
		for _, leave := range leaves[1:] {
			leave()
		}
		// The gave-up read left no slot taken: all conns can be held again.
		for range conns {
			leave, err := db.EnterReadForTest(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer leave()
		}
	})
}
