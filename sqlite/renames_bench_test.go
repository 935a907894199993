package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/loremnews/loremnews"
)

// BenchmarkRenameAndRetitle times one rename of an author and one retitle
// of a post (the write transaction, which holds the writer) when the
// author has written, and the post holds, N comments of 10,000
// characters, the longest a comment can be: the worst a user can make.
// (TestRenameAndRetitleWriteLittle checks what each writes.) N defaults
// to 3,000; LOREMNEWS_RENAME_COMMENTS sets it (25,000: ~250 MB of
// comments).
//
//	go test -run '^$' -bench RenameAndRetitle -benchtime 20x ./sqlite/
func BenchmarkRenameAndRetitle(b *testing.B) {
	n := 3000
	if s := os.Getenv("LOREMNEWS_RENAME_COMMENTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatalf("LOREMNEWS_RENAME_COMMENTS: %v", err)
		}
	}
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "renames.sqlite3")
	db := MustOpenDSN(b, path)
	author := MustCreateUser(b, db, "author")
	p := MustCreatePost(b, db, author.ID, "A post with many long comments")
	body := strings.Repeat("Long words, many of them. ", 400)[:10000]
	for range n {
		MustCreateComment(b, db, p.ID, author.ID, body)
	}
	for _, change := range []struct {
		name string
		run  func(i int) error
	}{
		{"rename", func(i int) error {
			_, err := db.UpdateProfile(ctx, author.ID, loremnews.ProfileChange{ScreenName: fmt.Sprintf("author%d", i)})
			return err
		}},
		{"retitle", func(i int) error {
			_, err := db.UpdatePost(ctx, p.ID, loremnews.PostInput{Title: fmt.Sprintf("A post with many long comments, take %d", i)})
			return err
		}},
	} {
		b.Run(fmt.Sprintf("%s/comments=%d", change.name, n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				if err := change.run(i); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
