package storetest

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"testing"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/seed"
)

// testImportStream loads a generated set from its stream, row by row: the
// database must then hold exactly the rows the stream yields, with true
// counters. A stream cut off midway (the
// context cancelled after some comments) must leave the old data whole.
func testImportStream(t *testing.T, open Opener) {
	ctx := context.Background()
	cfg := seed.Config{Users: 9, Posts: 40, Seed: 3, BcryptCost: 4}
	set, err := seed.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := open(t)
	old := MustSeed(t, db, 4, 5)
	// The same rows, held in memory: the stream replays them from the seed.
	want := &loremnews.Dataset{
		Users:    slices.Collect(set.DatasetStream.Users),
		Posts:    slices.Collect(set.DatasetStream.Posts),
		Comments: slices.Collect(set.DatasetStream.Comments),
	}
	wantCounts(want)

	// Cut off: the old rows stay.
	cut, cancel := context.WithCancel(ctx)
	defer cancel()
	broken := set.DatasetStream
	broken.Comments = cancelAfter(set.DatasetStream.Comments, 25, cancel)
	// The error says so in the store's own terms (PostgreSQL's may read
	// "unavailable"); what matters is that it fails and loses nothing.
	if err := db.ImportStream(cut, broken); err == nil {
		t.Fatal("import cut off by a cancelled context succeeded")
	}
	if c := MustBeConsistent(t, db); c.Users != len(old.Users) || c.Posts != len(old.Posts) || c.Comments != len(old.Comments) {
		t.Fatalf("after a cut-off import: %+v, want the old %d/%d/%d rows", c, len(old.Users), len(old.Posts), len(old.Comments))
	}

	if err := db.ImportStream(ctx, set.DatasetStream); err != nil {
		t.Fatal(err)
	}
	c := MustBeConsistent(t, db)
	if c.Users != set.Users || c.Posts != set.Posts || c.Comments != set.Comments {
		t.Fatalf("imported %+v, the set says %d/%d/%d", c, set.Users, set.Posts, set.Comments)
	}
	got, err := db.ExportDataset(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := fmt.Sprint(summary(got)), fmt.Sprint(summary(want)); g != w {
		t.Fatalf("streamed rows differ from the generated set:\n got %.500s\nwant %.500s", g, w)
	}
}

// cancelAfter yields n rows of rows, then cancels and goes on yielding, as
// a stream whose reader was interrupted would.
func cancelAfter[T any](rows iter.Seq[T], n int, cancel func()) iter.Seq[T] {
	return func(yield func(T) bool) {
		i := 0
		for row := range rows {
			if i++; i == n {
				cancel()
			}
			if !yield(row) {
				return
			}
		}
	}
}

// wantCounts sets the counter caches of ds to the true counts, as a store
// does after a load.
func wantCounts(ds *loremnews.Dataset) {
	posts, comments := ds.TrueCounts()
	for _, u := range ds.Users {
		u.PostsCount = posts[u.ID]
	}
	for _, p := range ds.Posts {
		p.CommentsCount = comments[p.ID]
	}
}

func testSeedLoad(t *testing.T, open Opener) {
	db := open(t)
	ds := MustSeed(t, db, 20, 50)
	c := MustBeConsistent(t, db)
	if c.Users != 20 || c.Posts != 50 || c.Comments != len(ds.Comments) || c.Comments < 50*5 || c.Comments > 50*15 {
		t.Fatalf("counts = %+v", c)
	}
	// Reseeding replaces everything, ids start again at 1.
	MustSeed(t, db, 10, 5)
	c = MustBeConsistent(t, db)
	if c.Users != 10 || c.Posts != 5 {
		t.Fatalf("after reseed: %+v", c)
	}
	if _, err := db.FindPostByID(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if empty, err := db.Empty(context.Background()); err != nil || empty {
		t.Fatalf("empty = %v, %v", empty, err)
	}
}
