package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/loremnews/loremnews"
)

// testConcurrentWriters runs every benchmarking write from many goroutines
// at once: none may fail, and the counters must add up afterwards.
func testConcurrentWriters(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	bm := db.Benchmark()
	MustSeed(t, db, 20, 200)
	before := MustBeConsistent(t, db)
	const workers, each = 16, 60
	var (
		wg                        sync.WaitGroup
		createdPosts, deletedPost atomic.Int64
		createdComments, deleted  atomic.Int64
		failures                  = make(chan error, workers*each)
	)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				var err error
				switch (w + i) % 5 {
				case 0:
					_, err = bm.CreatePost(ctx, loremnews.PostInput{Title: fmt.Sprintf("Concurrent post %d-%d", w, i)})
					if err == nil {
						createdPosts.Add(1)
					}
				case 1:
					_, err = bm.CreateComment(ctx, loremnews.CommentInput{Body: "A concurrent comment"})
					if err == nil {
						createdComments.Add(1)
					}
				case 2:
					_, err = bm.DeletePost(ctx)
					if err == nil {
						deletedPost.Add(1)
					}
				case 3:
					_, _, err = bm.DeleteComment(ctx)
					if err == nil {
						deleted.Add(1)
					}
				case 4:
					_, _, _, err = bm.ShowUser(ctx, 10)
				}
				if err != nil {
					failures <- err
				}
			}
		})
	}
	wg.Wait()
	close(failures)
	n := 0
	for err := range failures {
		if n++; n <= 5 {
			t.Errorf("write failed: %v", err)
		}
	}
	if n > 0 {
		t.Fatalf("%d of %d writes failed", n, workers*each)
	}
	after := MustBeConsistent(t, db)
	if want := before.Posts + int(createdPosts.Load()-deletedPost.Load()); after.Posts != want {
		t.Fatalf("posts: %d, want %d (lost or doubled writes)", after.Posts, want)
	}
	if after.Comments > before.Comments+int(createdComments.Load()-deleted.Load()) {
		t.Fatalf("comments: %d, more than %d + %d - %d", after.Comments, before.Comments, createdComments.Load(), deleted.Load())
	}
}
