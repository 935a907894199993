package sqlite_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/sqlite"
)

// Go benchmarks of the data layer's hot paths, on the full seed data set.
// Compare before and after a change with benchstat:
//
//	go test -run '^$' -bench . -count 6 ./sqlite/ > old.txt   (then new.txt)
//	benchstat old.txt new.txt

func benchDB(b *testing.B) *sqlite.DB {
	b.Helper()
	db := MustOpenDB(b, "")
	MustSeed(b, db, 100, 1000)
	return db
}

func BenchmarkReads(b *testing.B) {
	ctx := context.Background()
	db := benchDB(b)
	for name, read := range map[string]func() error{
		"PostPage":    func() error { _, _, err := db.PostPage(ctx, 500); return err },
		"UserPage":    func() error { _, _, _, err := db.UserPage(ctx, 50, 100); return err },
		"RecentPosts": func() error { _, err := db.RecentPosts(ctx, 50); return err },
		"PostsBefore": func() error { _, err := db.PostsBefore(ctx, 501, 100); return err },
		"FindUser":    func() error { _, err := db.FindUserByID(ctx, 50); return err },
		"PointRead":   func() error { _, err := db.Benchmark().PointRead(ctx); return err },
	} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if err := read(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkWrites(b *testing.B) {
	ctx := context.Background()
	db := benchDB(b)
	bm := db.Benchmark()
	// ShowPost: a touch of a random user (one write transaction), then the
	// page of a random post.
	b.Run("ShowPost", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := bm.ShowPost(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Titles are unique: i carries over between the sub-benchmark's runs
	// (b.Run calls it again with a larger b.N, and -count repeats it) on
	// the same database.
	i := 0
	b.Run("CreatePost", func(b *testing.B) {
		for b.Loop() {
			i++
			if _, err := bm.CreatePost(ctx, loremnews.PostInput{Title: fmt.Sprintf("Bench post %d", i)}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("CreateComment", func(b *testing.B) {
		for b.Loop() {
			if _, err := bm.CreateComment(ctx, loremnews.CommentInput{Body: "Bench comment"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
