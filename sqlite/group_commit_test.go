package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/internal/testenv"
	"github.com/loremnews/loremnews/sqlite"
)

// TestGroupCommitIsolatesFailures: writes committed together in one batch
// must not share fate. 40 writers at once, the turn held so they all queue
// into batches: 20 unique titles (all must succeed) and 20 of one title
// (exactly one may).
func TestGroupCommitIsolatesFailures(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t, sqlite.ProfileBatch)
	MustSeed(t, db, 10, 10)
	before := MustBeConsistent(t, db)

	release := db.HoldWriterTurn(t)
	var (
		wg              sync.WaitGroup
		uniqueOK, dupOK atomic.Int32
		dupInvalid      atomic.Int32
	)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			title := fmt.Sprintf("Unique title %d", i)
			if i%2 == 1 {
				title = "The same title for all"
			}
			_, err := db.CreatePost(ctx, 1, loremnews.PostInput{Title: title})
			switch {
			case err == nil && i%2 == 0:
				uniqueOK.Add(1)
			case err == nil:
				dupOK.Add(1)
			case loremnews.ErrorCode(err) == loremnews.EINVALID && i%2 == 1:
				dupInvalid.Add(1)
			default:
				t.Errorf("writer %d: %v", i, err)
			}
		}()
	}
	testenv.WaitFor(t, time.Minute, "all 40 writers to queue behind the held turn", func() bool { return db.Stats().Writer.Depth >= 40 })
	release()
	waitGroupWithin(t, &wg, time.Minute, "the 40 writers to finish after the turn was released")
	if uniqueOK.Load() != 20 || dupOK.Load() != 1 || dupInvalid.Load() != 19 {
		t.Fatalf("unique ok %d, duplicate ok %d, duplicate invalid %d", uniqueOK.Load(), dupOK.Load(), dupInvalid.Load())
	}
	after := MustBeConsistent(t, db)
	if after.Posts != before.Posts+21 {
		t.Fatalf("posts %d → %d, want +21", before.Posts, after.Posts)
	}
}

// TestGroupCommitSkipsAbandonedWrites: a write whose client gives up while
// it waits for its turn never runs.
func TestGroupCommitSkipsAbandonedWrites(t *testing.T) {
	db := MustOpenDB(t, sqlite.ProfileBatch)
	release := db.HoldWriterTurn(t)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := db.CreateUser(ctx, "never_written", "x")
		errc <- err
	}()
	testenv.WaitFor(t, time.Minute, "the write to queue behind the held turn", func() bool { return db.Stats().Writer.Depth >= 1 })
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("an abandoned write returned %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("an abandoned write did not return within a minute of its cancel")
	}
	release()
	MustCreateUser(t, db, "written_after") // the writer goes on
	if _, err := db.FindUserByScreenName(context.Background(), "never_written"); loremnews.ErrorCode(err) != loremnews.ENOTFOUND {
		t.Fatalf("the abandoned write ran: %v", err)
	}
	if s := db.Stats().Writer; s.Abandoned != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// waitGroupWithin waits for wg, failing the test, naming what it waited for,
// if that takes longer than within.
func waitGroupWithin(t *testing.T, wg *sync.WaitGroup, within time.Duration, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(within):
		t.Fatalf("waited %s for %s; gave up", within, what)
	}
}
