package setups

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/loremnews/loremnews/storetest"
)

// The benchmarking actions that pick a random post must not fail when a
// concurrent post_destroy deletes their pick. In the single-pool setups a
// page's reads are not one snapshot, so the post can vanish between the
// pick and the page; the action picks again. Run with a small table and
// deleters racing readers (a small table, so a pick is often the post being
// deleted, in several rounds), in every setup that never answers busy.
func TestShowPostSurvivesConcurrentDeletes(t *testing.T) {
	for _, profile := range []string{Enhanced, Immediate, Split} {
		t.Run(profile, func(t *testing.T) {
			for range 8 {
				showPostBesideDeletes(t, profile)
			}
		})
	}
}

func showPostBesideDeletes(t *testing.T, profile string) {
	ctx := context.Background()
	db := mustOpen(t, profile, "")
	const posts = 100
	storetest.MustSeed(t, db, 20, posts)
	bm := db.Benchmark()

	// Deleters stop at half the posts, so the readers always have
	// posts to pick; readers stop when the deleters are done.
	var (
		deleted  atomic.Int64
		shown    atomic.Int64
		done     = make(chan struct{})
		deleters sync.WaitGroup
		readers  sync.WaitGroup
	)
	for range 2 {
		deleters.Add(1)
		go func() {
			defer deleters.Done()
			for deleted.Add(1) <= posts/2 {
				if _, err := bm.DeletePost(ctx); err != nil {
					t.Errorf("post_destroy: %v", err)
					return
				}
			}
		}()
	}
	for range 4 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				p, _, err := bm.ShowPost(ctx)
				if err != nil {
					t.Errorf("post_show: %v", err)
					return
				}
				if p == nil || p.ID == 0 {
					t.Errorf("post_show returned no post: %+v", p)
					return
				}
				shown.Add(1)
			}
		}()
	}
	deleters.Wait()
	close(done)
	readers.Wait()

	if c := storetest.MustBeConsistent(t, db); c.Posts != posts/2 {
		t.Errorf("%d posts left after deleting %d of %d", c.Posts, posts/2, posts)
	}
	if shown.Load() == 0 {
		t.Error("no post_show ran beside the deletes")
	}
}
