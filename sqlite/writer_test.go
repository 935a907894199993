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

// TestWriterSkipsAbandonedWrites: a write whose client gives up while it
// waits for its turn never runs, and the writer goes on.
func TestWriterSkipsAbandonedWrites(t *testing.T) {
	for _, p := range []sqlite.Profile{sqlite.ProfileSplit, sqlite.ProfileBatch} {
		t.Run(string(p), func(t *testing.T) { testWriterSkipsAbandonedWrites(t, p) })
	}
}

func testWriterSkipsAbandonedWrites(t *testing.T, profile sqlite.Profile) {
	db := MustOpenDB(t, profile)
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

// TestWriterIsFIFO: writes run in the order they were queued.
func TestWriterIsFIFO(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t, sqlite.ProfileSplit)
	MustSeed(t, db, 3, 0)
	release := db.HoldWriterTurn(t)
	const n = 20
	ids := make([]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p, err := db.CreatePost(ctx, 1, loremnews.PostInput{Title: fmt.Sprintf("Queued %d", i)})
			if err != nil {
				t.Errorf("write %d: %v", i, err)
				return
			}
			ids[i] = p.ID
		})
		// Queue strictly one after another.
		testenv.WaitFor(t, time.Minute, fmt.Sprintf("%d writes queued", i+1), func() bool { return db.Stats().Writer.Depth == i+1 })
	}
	release()
	waitGroupWithin(t, &wg, time.Minute, "the queued writes to finish")
	for i := 1; i < n; i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("write %d got id %d after write %d's %d: not first come, first served (%v)", i, ids[i], i-1, ids[i-1], ids)
		}
	}
	if s := db.Stats().Writer; s.Depth != 0 || s.MaxDepth < n {
		t.Fatalf("stats %+v", s)
	}
}

// TestTouchesShareACommit: the touches queued at one moment commit in one
// transaction, each still touching a user and answering after the commit.
func TestTouchesShareACommit(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t, sqlite.ProfileSplit)
	MustSeed(t, db, 20, 20)
	bm := db.Benchmark()
	start := time.Now().Add(-time.Second)
	release := db.HoldWriterTurn(t)
	before := db.Stats().Writer.Commits
	const n = 30
	var wg sync.WaitGroup
	users := make([]int64, n)
	for i := range n {
		wg.Go(func() {
			u, _, _, err := bm.ShowUser(ctx, 10)
			if err != nil {
				t.Errorf("show user %d: %v", i, err)
				return
			}
			if u.LastSeenAt.Before(start) {
				t.Errorf("user %d shown before its touch committed: last seen %v", u.ID, u.LastSeenAt)
			}
			users[i] = u.ID
		})
	}
	testenv.WaitFor(t, time.Minute, "30 touches queued behind the held turn", func() bool { return db.Stats().Writer.Depth == n })
	release()
	waitGroupWithin(t, &wg, time.Minute, "the touches to finish")
	// The held write's commit, then one for all 30 touches.
	if got := db.Stats().Writer.Commits - before; got != 2 {
		t.Fatalf("%d commits for a held write and 30 queued touches, want 2", got)
	}
	distinct := map[int64]bool{}
	for _, id := range users {
		distinct[id] = true
	}
	if len(distinct) < 5 {
		t.Fatalf("30 touches among 20 users touched only %d distinct users", len(distinct))
	}
	MustBeConsistent(t, db)
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
