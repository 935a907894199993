package sqlite_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"reflect"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/sqlite"
	"github.com/loremnews/loremnews/sqlitedb"
)

// Go benchmarks of the data layer's hot paths, on the full seed data set.
// Compare before and after a change with benchstat:
//
//	go test -run '^$' -bench . -count 6 ./sqlite/ > old.txt   (then new.txt)
//	benchstat old.txt new.txt

func benchDB(b *testing.B) *sqlite.DB {
	b.Helper()
	db := MustOpenDB(b)
	MustSeed(b, db, 100, 1000)
	return db
}

func BenchmarkReads(b *testing.B) {
	ctx := context.Background()
	db := benchDB(b)
	for name, read := range map[string]func() error{
		"PostPage":    func() error { _, _, err := db.PostPage(ctx, 500); return err },
		"UserPage":    func() error { _, _, _, err := db.UserPage(ctx, 50, 100); return err },
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

// BenchmarkBinding reads the index's listing (100 posts with their
// authors) on one read connection, through database/sql as the store does
// and through go-sqlite3's driver interface directly: the difference is
// what database/sql costs per listing, the first measure to take before
// changing the binding.
func BenchmarkBinding(b *testing.B) {
	ctx := context.Background()
	db := benchDB(b)
	for _, path := range []struct {
		name string
		read func(context.Context, *sqlitedb.Rx, int64, int) ([]*loremnews.Post, error)
	}{
		{"database_sql", db.ListingThroughSQL},
		{"driver", db.ListingThroughDriver},
		{"handle", db.ListingThroughHandle},
	} {
		b.Run(path.name, func(b *testing.B) {
			err := db.OnReadConn(ctx, func(rx *sqlitedb.Rx) error {
				for b.Loop() {
					if posts, err := path.read(ctx, rx, 501, 100); err != nil || len(posts) != 100 {
						return fmt.Errorf("%d posts, %v", len(posts), err)
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}

// The paths of BenchmarkBinding read the same rows.
func TestBindingPathsAgree(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	MustSeed(t, db, 10, 150)
	err := db.OnReadConn(ctx, func(rx *sqlitedb.Rx) error {
		viaSQL, err := db.ListingThroughSQL(ctx, rx, 120, 100)
		if err != nil {
			return err
		}
		if len(viaSQL) != 100 {
			t.Fatalf("database/sql read %d posts, want 100", len(viaSQL))
		}
		for name, read := range map[string]func(context.Context, *sqlitedb.Rx, int64, int) ([]*loremnews.Post, error){
			"the driver": db.ListingThroughDriver,
			"the handle": db.ListingThroughHandle,
		} {
			got, err := read(ctx, rx, 120, 100)
			if err != nil {
				return err
			}
			if !reflect.DeepEqual(viaSQL, got) {
				t.Errorf("database/sql read %d posts, %s %d; first: %+v / %+v", len(viaSQL), name, len(got), viaSQL[0], got[0])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkReserveAttempt: twenty goroutines reserving at once, each for a
// key of its own, as a site's commenters do before each comment;
// commits/op is how many transactions that took per reservation (1 when
// each is its own; less when those waiting at one moment share one).
func BenchmarkReserveAttempt(b *testing.B) {
	ctx := context.Background()
	db := benchDB(b)
	var keys atomic.Int64
	before := db.Stats().Writer.Commits
	b.SetParallelism(20 / runtime.GOMAXPROCS(0))
	b.RunParallel(func(pb *testing.PB) {
		key := sha256.Sum256(fmt.Append(nil, "bench key ", keys.Add(1)))
		for pb.Next() {
			if _, _, err := db.ReserveAttempt(ctx, key[:], 1<<30, time.Hour, time.Now()); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(db.Stats().Writer.Commits-before)/float64(b.N), "commits/op")
}
