package storetest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loremnews/loremnews"
)

const (
	screenNameTaken = "Screen name has already been taken."
	titleTaken      = "Title has already been taken."
)

// wantNameTaken fails the test unless err refuses a screen name as taken:
// the name itself in another case, or one that reads as another's.
func wantNameTaken(tb testing.TB, err error) {
	tb.Helper()
	wantCode(tb, err, loremnews.EINVALID)
	if got := loremnews.ErrorMessage(err); !nameTaken(got) {
		tb.Fatalf("message = %q (%v), want %q or one naming the name it reads as", got, err, screenNameTaken)
	}
}

func nameTaken(msg string) bool {
	return msg == screenNameTaken || strings.HasPrefix(msg, "Screen name reads as ") && strings.HasSuffix(msg, ", which is taken.")
}

// wantTaken fails the test unless err is EINVALID with message msg.
func wantTaken(tb testing.TB, err error, msg string) {
	tb.Helper()
	wantCode(tb, err, loremnews.EINVALID)
	if got := loremnews.ErrorMessage(err); got != msg {
		tb.Fatalf("message = %q (%v), want %q", got, err, msg)
	}
}

// testLookAlikes: a screen name that reads as another account's name (as
// shown, in any case: loremnews.NameKeys) is refused, naming that name,
// on create and on change, and ordinary names that only share a skeleton
// once folded pass; a title that is a taken one in another case or spacing
// (loremnews.TitleKey) is refused, and one that merely looks alike passes;
// an edit that keeps its own name or title passes.
func testLookAlikes(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	leo := MustCreateUser(t, db, "leo5")
	MustCreateUser(t, db, "magna4")
	anna := MustCreateUser(t, db, "anna")

	t.Run("ScreenNames", func(t *testing.T) {
		for _, name := range []string{"Ieo5", "1eo5", "le05", "rnagna4"} {
			_, err := db.CreateUser(ctx, name, "digest")
			wantNameTaken(t, err)
		}
		for _, name := range []string{"leo6", "anne", "magma4"} {
			MustCreateUser(t, db, name)
		}
		for _, name := range []string{"wendy", "dave", "magnus", "oliver", "sophia", "samson", "bob", "sam1", "all", "lan", "flim", "userio", "john_doe", "Quinn", "Ama", "clay", "Clay2"} {
			MustCreateUser(t, db, name)
		}
		for name, other := range map[string]string{
			"vvendy": "wendy", "rnagnus": "magnus", "oliver.": "oliver", "sophia_": "sophia",
			"5AM5ON": "samson", "8O8": "bob", "Ian": "lan", "john__doe": "john_doe",
		} {
			_, err := db.CreateUser(ctx, name, "digest")
			wantTaken(t, err, "Screen name reads as "+other+", which is taken.")
		}
		_, err := db.CreateUser(ctx, "SAMSON", "digest")
		wantTaken(t, err, screenNameTaken)
		// Names that only some fonts draw alike are names of their own:
		// nn is not m, cl is not d.
		for _, name := range []string{"sami", "ali", "ian", "film", "user10", "clave", "nnagnus", "Quim", "Anna2", "day", "Day2"} {
			MustCreateUser(t, db, name)
		}
	})
	t.Run("Rename", func(t *testing.T) {
		_, err := db.UpdateProfile(ctx, anna.ID, loremnews.ProfileChange{ScreenName: "Ieo5"})
		wantTaken(t, err, "Screen name reads as leo5, which is taken.")
		// Its own name in another case has its own key.
		if u, err := db.UpdateProfile(ctx, anna.ID, loremnews.ProfileChange{ScreenName: "Anna", About: "Hello."}); err != nil || u.ScreenName != "Anna" {
			t.Fatalf("rename to its own look-alike = %+v, %v", u, err)
		}
		if _, err := db.UpdateProfile(ctx, leo.ID, loremnews.ProfileChange{ScreenName: "leo5", About: "Same name."}); err != nil {
			t.Fatalf("edit keeping the name: %v", err)
		}
	})
	t.Run("Titles", func(t *testing.T) {
		MustCreatePost(t, db, leo.ID, "Test title")
		for _, title := range []string{
			"Test  title", // two spaces
			"test title",  // lower case
			"TEST TITLE",  // upper case
			"Test title ", // a space after
			"Ｔｅｓｔ title",  // full-width
		} {
			_, err := db.CreatePost(ctx, anna.ID, loremnews.PostInput{Title: title})
			wantTaken(t, err, titleTaken)
		}
		// Titles are not identities: one that only looks like a taken one
		// is another title.
		for _, title := range []string{"Best title", "Tеst title", "Test tit1e"} {
			MustCreatePost(t, db, anna.ID, title)
		}
		MustCreatePost(t, db, anna.ID, "Chapter 11")
		MustCreatePost(t, db, anna.ID, "Chapter II")
		MustCreatePost(t, db, anna.ID, "Modern times")
		MustCreatePost(t, db, anna.ID, "Modem times")
	})
	t.Run("EditTitle", func(t *testing.T) {
		p := MustCreatePost(t, db, anna.ID, "Anna's own post")
		_, err := db.UpdatePost(ctx, p.ID, loremnews.PostInput{Title: "test  title", Description: "Copied."})
		wantTaken(t, err, titleTaken)
		if got, err := db.UpdatePost(ctx, p.ID, loremnews.PostInput{Title: "Anna's own post", Description: "Edited."}); err != nil || got.Description != "Edited." {
			t.Fatalf("edit keeping the title = %+v, %v", got, err)
		}
		if got, err := db.UpdatePost(ctx, p.ID, loremnews.PostInput{Title: "ANNA'S OWN POST", Description: "Shouted."}); err != nil || got.Title != "ANNA'S OWN POST" {
			t.Fatalf("edit to its own look-alike = %+v, %v", got, err)
		}
	})
	t.Run("FreedByDelete", func(t *testing.T) {
		p := MustCreatePost(t, db, anna.ID, "Soon deleted")
		if err := db.DeletePost(ctx, p.ID); err != nil {
			t.Fatal(err)
		}
		MustCreatePost(t, db, leo.ID, "SOON DELETED")
	})
	MustBeConsistent(t, db)
}

// testConcurrentLookAlikes: look-alikes created at the same moment, each
// by a goroutine of its own: exactly one is stored, every other is
// refused as taken. For titles the unique index decides; for screen names
// the check runs in the write transaction, which no other name change
// shares (SQLite's one writer, PostgreSQL's advisory lock).
func testConcurrentLookAlikes(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	author := MustCreateUser(t, db, "author")
	for round := range 5 {
		names := []string{
			fmt.Sprintf("leo%d", round), fmt.Sprintf("Ieo%d", round), fmt.Sprintf("1eo%d", round),
			fmt.Sprintf("le0%d", round), fmt.Sprintf("Ie0%d", round), fmt.Sprintf("1e0%d", round),
		}
		created, refused := Race(t, len(names), func(i int) error {
			_, err := db.CreateUser(ctx, names[i], "digest")
			return err
		}, nameTaken)
		if created != 1 || refused != len(names)-1 {
			t.Fatalf("round %d: %d of the look-alike names %v stored, %d refused; want exactly one stored", round, created, names, refused)
		}
		titles := []string{
			fmt.Sprintf("Test title %d", round), fmt.Sprintf("TEST TITLE %d", round), fmt.Sprintf("Test  title %d", round),
			fmt.Sprintf("test title %d", round), fmt.Sprintf(" Test title %d", round), fmt.Sprintf("Ｔｅｓｔ title %d", round),
		}
		created, refused = Race(t, len(titles), func(i int) error {
			_, err := db.CreatePost(ctx, author.ID, loremnews.PostInput{Title: titles[i]})
			return err
		}, func(msg string) bool { return msg == titleTaken })
		if created != 1 || refused != len(titles)-1 {
			t.Fatalf("round %d: %d of the look-alike titles %v stored, %d refused; want exactly one stored", round, created, titles, refused)
		}
	}
	c := MustBeConsistent(t, db)
	if c.Users != 1+5 || c.Posts != 5 {
		t.Fatalf("%d users, %d posts; want 6 and 5", c.Users, c.Posts)
	}
}

// Race runs create(0) … create(n-1) at once, each in a goroutine released
// together, and counts those that succeeded and those refused with a
// message taken accepts. A busy database (EUNAVAILABLE: the naive SQLite profile's
// SQLITE_BUSY) is tried again; any other error fails the test.
func Race(t *testing.T, n int, create func(i int) error, taken func(string) bool) (created, refused int) {
	t.Helper()
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		errs  = make([]error, n)
	)
	for i := range n {
		wg.Go(func() {
			<-start
			for try := 0; ; try++ {
				errs[i] = create(i)
				if loremnews.ErrorCode(errs[i]) != loremnews.EUNAVAILABLE || try == 100 {
					return
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		switch {
		case err == nil:
			created++
		case loremnews.ErrorCode(err) == loremnews.EINVALID && taken(loremnews.ErrorMessage(err)):
			refused++
		default:
			t.Fatalf("create: %v", err)
		}
	}
	return created, refused
}

// OldLookAlikes is a data set as a database could hold it before look-alike
// keys (migrations 0004 and 0005): screen names and titles that look alike
// ("Ieo5" beside "leo5", "test  title" beside "Test title"), each pair's
// older row first. The stores' migration tests write it into the old
// schema; testImportLookAlikes imports it. CheckOldLookAlikes checks what
// a database holding it does.
func OldLookAlikes() *loremnews.Dataset {
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	ds := &loremnews.Dataset{}
	for i, name := range []string{"leo5", "Ieo5", "magna4", "rnagna4", "anna"} {
		ds.Users = append(ds.Users, &loremnews.User{ID: int64(i + 1), ScreenName: name, PasswordDigest: "digest",
			LastSeenAt: at, CreatedAt: at, UpdatedAt: at})
	}
	for i, p := range []struct {
		user  int64
		title string
	}{{1, "Test title"}, {2, "test  title"}, {3, "Tеst title"}, {5, "Other title"}} {
		ds.Posts = append(ds.Posts, &loremnews.Post{ID: int64(i + 1), UserID: p.user, Title: p.title, Description: "Old.",
			PublishedAt: at, CreatedAt: at, UpdatedAt: at})
		ds.Users[p.user-1].PostsCount++
	}
	return ds
}

// CheckOldLookAlikes checks a database that holds OldLookAlikes (migrated
// or imported): every row is there; a new look-alike of any of them is
// refused; the later look-alikes' owners may still edit them keeping the
// name or title, but not rename to another look-alike, and a name they
// give up is gone for good.
func CheckOldLookAlikes(t *testing.T, db loremnews.Database) {
	t.Helper()
	ctx := context.Background()
	ds, err := db.ExportDataset(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old := OldLookAlikes()
	if got, want := fmt.Sprint(summary(ds)), fmt.Sprint(summary(old)); got != want {
		t.Fatalf("rows:\n got %s\nwant %s", got, want)
	}
	for _, name := range []string{"1eo5", "Ie05", "MAGNA4"} {
		_, err := db.CreateUser(ctx, name, "digest")
		wantNameTaken(t, err)
	}
	for _, title := range []string{"TEST TITLE", "Tеst  title"} {
		_, err := db.CreatePost(ctx, 5, loremnews.PostInput{Title: title})
		wantTaken(t, err, titleTaken)
	}
	if u, err := db.UpdateProfile(ctx, 2, loremnews.ProfileChange{ScreenName: "Ieo5", About: "Still here."}); err != nil || u.About != "Still here." {
		t.Fatalf("the later look-alike edits its profile keeping its name: %+v, %v", u, err)
	}
	_, err = db.UpdateProfile(ctx, 4, loremnews.ProfileChange{ScreenName: "RNAGNA4"})
	wantNameTaken(t, err)
	for _, id := range []int64{2, 3} {
		if p, err := db.UpdatePost(ctx, id, loremnews.PostInput{Title: old.Posts[id-1].Title, Description: "Edited."}); err != nil || p.Description != "Edited." {
			t.Fatalf("the later look-alike post %d edits its description keeping its title: %+v, %v", id, p, err)
		}
	}
	_, err = db.UpdatePost(ctx, 4, loremnews.PostInput{Title: "Test Title"})
	wantTaken(t, err, titleTaken)
	if _, err := db.UpdateProfile(ctx, 2, loremnews.ProfileChange{ScreenName: "leo7"}); err != nil {
		t.Fatalf("the later look-alike renames to a name of its own: %v", err)
	}
	_, err = db.UpdateProfile(ctx, 2, loremnews.ProfileChange{ScreenName: "Ieo5"})
	wantNameTaken(t, err)
	MustBeConsistent(t, db)
}

// testImportLookAlikes: a data set holding look-alikes (exported from a
// database that had them before migration 0005) imports, keeping every
// row, and so does its export again; the database then refuses new
// look-alikes as a migrated one does.
func testImportLookAlikes(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	if err := db.ImportDataset(ctx, OldLookAlikes()); err != nil {
		t.Fatal(err)
	}
	ds, err := db.ExportDataset(ctx)
	if err != nil {
		t.Fatal(err)
	}
	again := open(t)
	if err := again.ImportDataset(ctx, ds); err != nil {
		t.Fatal(err)
	}
	CheckOldLookAlikes(t, db)
	CheckOldLookAlikes(t, again)
}
