package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/sqlite"
	"github.com/mattn/go-sqlite3"
)

// Another program on the file (here the plain driver, as a script would
// write) renames a user, retitles a post, and inserts a post and a comment
// after the pages have been read once (so the names and titles are in the
// program's cache): the pages show what the rows say at once.
func TestNamesFollowOtherProgramsWrites(t *testing.T) {
	ctx := context.Background()
	db, other, alice, bob, p := namesFixture(t, true)
	var newPost int64
	for _, s := range []struct {
		query string
		args  []any
	}{
		{`UPDATE users SET screen_name = 'alicia' WHERE id = ?`, []any{alice.ID}},
		{`UPDATE posts SET title = 'Retitled elsewhere' WHERE id = ?`, []any{p.ID}},
		{`INSERT INTO posts (user_id, title, created_at, updated_at) VALUES (?, 'Posted elsewhere', 0, 0)`, []any{bob.ID}},
		{`INSERT INTO comments (post_id, user_id, body, created_at, updated_at) VALUES (?, ?, 'Commented elsewhere', 0, 0)`, []any{p.ID, alice.ID}},
		{`INSERT INTO comments (post_id, user_id, body, created_at, updated_at) VALUES (?, ?, 'Bob again', 0, 0)`, []any{p.ID, bob.ID}},
	} {
		res, err := other.ExecContext(ctx, s.query, s.args...)
		if err != nil {
			t.Fatalf("%s: %v", s.query, err)
		}
		if newPost == 0 && s.query[:6] == "INSERT" {
			newPost, _ = res.LastInsertId()
		}
	}
	if _, err := other.ExecContext(ctx, `UPDATE posts SET comments_count = (SELECT count(*) FROM comments WHERE post_id = posts.id);
		UPDATE users SET posts_count = (SELECT count(*) FROM posts WHERE user_id = users.id)`); err != nil {
		t.Fatal(err)
	}

	MustBeConsistent(t, db)
	posts, err := db.PostsBefore(ctx, newPost+1, 10)
	if err != nil || len(posts) != 2 || posts[0].Author.ScreenName != "bob" || posts[1].Author.ScreenName != "alicia" || posts[1].Title != "Retitled elsewhere" {
		t.Errorf("front page = %+v %+v, %v", posts[0], posts[1], err)
	}
	post, comments, err := db.PostPage(ctx, p.ID)
	if err != nil || post.Author.ScreenName != "alicia" || len(comments) != 3 ||
		comments[0].Author.ScreenName != "bob" || comments[1].Author.ScreenName != "alicia" || comments[2].Author.ScreenName != "bob" {
		t.Errorf("post page = %+v %+v, %v", post, comments, err)
	}
	for _, u := range []int64{alice.ID, bob.ID} {
		_, _, cs, err := db.UserPage(ctx, u, 10)
		if err != nil || len(cs) == 0 {
			t.Fatalf("user %d's page: %v, %v", u, cs, err)
		}
		for _, c := range cs {
			if c.Post.Title != "Retitled elsewhere" {
				t.Errorf("user %d's comment %d is on %q, want the post's title now", u, c.ID, c.Post.Title)
			}
		}
	}
}

// Another program that replaces a user or a post (INSERT OR REPLACE, which
// deletes the row and inserts it again, so no UPDATE trigger fires) with
// foreign keys off, as the sqlite3 shell runs, or changes a user's id,
// leaves no stale name or title on the pages.
func TestNamesFollowAReplaceByAnotherProgram(t *testing.T) {
	ctx := context.Background()
	db, other, alice, bob, p := namesFixture(t, false)
	MustCreateComment(t, db, p.ID, alice.ID, "Alice answers")
	readPages(t, db, p.ID, alice.ID, bob.ID)
	// replace inserts again the row id of table, every column as it is but
	// column, which becomes value.
	replace := func(table, column, value string, id int64) {
		t.Helper()
		rows, err := other.QueryContext(ctx, `SELECT name FROM pragma_table_info(?)`, table)
		if err != nil {
			t.Fatal(err)
		}
		var cols, exprs []string
		for rows.Next() {
			var c string
			rows.Scan(&c)
			cols = append(cols, c)
			if c == column {
				exprs = append(exprs, "?")
			} else {
				exprs = append(exprs, c)
			}
		}
		rows.Close()
		q := `INSERT OR REPLACE INTO ` + table + ` (` + strings.Join(cols, ", ") + `) SELECT ` + strings.Join(exprs, ", ") + ` FROM ` + table + ` WHERE id = ?`
		if _, err := other.ExecContext(ctx, q, value, id); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	replace("posts", "title", "Replaced elsewhere", p.ID)
	replace("users", "screen_name", "alicia", alice.ID)

	post, comments, err := db.PostPage(ctx, p.ID)
	if err != nil || post.Title != "Replaced elsewhere" || post.Author.ScreenName != "alicia" || len(comments) != 2 {
		t.Fatalf("post page = %+v %+v, %v", post, comments, err)
	}
	for _, c := range comments {
		if want := map[int64]string{alice.ID: "alicia", bob.ID: "bob"}[c.Author.ID]; c.Author.ScreenName != want {
			t.Errorf("comment %d shows its author as %q, want %q", c.ID, c.Author.ScreenName, want)
		}
	}
	_, _, cs, err := db.UserPage(ctx, bob.ID, 10)
	if err != nil || len(cs) != 1 || cs[0].Post.Title != "Replaced elsewhere" {
		t.Fatalf("bob's comments = %+v, %v, want one on %q", cs, err, "Replaced elsewhere")
	}

	// Users' ids changed by hand, foreign keys off, so the comments keep
	// theirs: bob's row moves to another id, then alice's row takes bob's
	// old id and the name robert. Bob's comments are now robert's, and
	// alice's id names no one.
	readPages(t, db, p.ID, alice.ID, bob.ID)
	if _, err := other.ExecContext(ctx, `UPDATE users SET id = 1000 WHERE id = ?`, bob.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := other.ExecContext(ctx, `UPDATE users SET id = ?, screen_name = 'robert' WHERE id = ?`, bob.ID, alice.ID); err != nil {
		t.Fatal(err)
	}
	_, comments, err = db.PostPage(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range comments {
		if c.Author.ID == bob.ID && c.Author.ScreenName != "robert" {
			t.Errorf("comment %d by user %d shows %q, want the name its id has now, %q", c.ID, bob.ID, c.Author.ScreenName, "robert")
		}
		if c.Author.ID == alice.ID && c.Author.ScreenName != "" {
			t.Errorf("comment %d by user %d shows %q; no user has that id now", c.ID, alice.ID, c.Author.ScreenName)
		}
	}
}

// namesFixture is a database with alice's post and bob's comment on it,
// its pages read once (the names in the cache), and another program's
// connection to the file, with foreign keys on or off.
func namesFixture(t *testing.T, foreignKeys bool) (db *sqlite.DB, other *sql.DB, alice, bob *loremnews.User, p *loremnews.Post) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "names.sqlite3")
	db = MustOpenDSN(t, path)
	alice = MustCreateUser(t, db, "alice")
	bob = MustCreateUser(t, db, "bob")
	p = MustCreatePost(t, db, alice.ID, "A post of alice's")
	MustCreateComment(t, db, p.ID, bob.ID, "Bob comments")
	readPages(t, db, p.ID, alice.ID, bob.ID)
	fk := map[bool]string{true: "1", false: "0"}[foreignKeys]
	other, err := sql.Open("sqlite3", "file:"+path+"?_foreign_keys="+fk+"&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	return db, other, alice, bob, p
}

// readPages reads the pages that show names and titles, filling the
// program's cache of them.
func readPages(t *testing.T, db *sqlite.DB, postID int64, users ...int64) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.PostsBefore(ctx, postID+100, 10); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.PostPage(ctx, postID); err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if _, _, _, err := db.UserPage(ctx, u, 10); err != nil {
			t.Fatal(err)
		}
	}
}

// One rename or one retitle writes a few pages, however many posts and
// comments show the name or title: here 120 comments of 10,000 characters
// by one author on one post (before migration 0009 each was rewritten,
// body and all, in the table and in a listing index: ~5 MB a change).
func TestRenameAndRetitleWriteLittle(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "renames.sqlite3")
	db := MustOpenDSN(t, path)
	alice := MustCreateUser(t, db, "alice")
	bob := MustCreateUser(t, db, "bob")
	p := MustCreatePost(t, db, bob.ID, "A post with long comments")
	body := strings.Repeat("Long words, many of them. ", 400)[:10000]
	for range 120 {
		MustCreateComment(t, db, p.ID, alice.ID, body)
	}
	readPages(t, db, p.ID, alice.ID, bob.ID)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// The statements the store runs, on a connection that leaves the WAL
	// alone, so its size after each is what that change wrote.
	other, err := sql.Open("sqlite3", "file:"+path+"?_foreign_keys=1&_busy_timeout=5000&_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.SetMaxOpenConns(1)
	const limit = 1 << 20
	for _, change := range []struct {
		what, query string
		id          int64
	}{
		{"a rename", `UPDATE users SET screen_name = 'alicia', updated_at = 1 WHERE id = ?`, alice.ID},
		{"a retitle", `UPDATE posts SET title = 'A post with long comments, retitled', updated_at = 1 WHERE id = ?`, p.ID},
	} {
		if _, err := other.ExecContext(ctx, `PRAGMA wal_autocheckpoint = 0`); err != nil {
			t.Fatal(err)
		}
		if _, err := other.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			t.Fatal(err)
		}
		if _, err := other.ExecContext(ctx, change.query, change.id); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s wrote %d bytes of WAL", change.what, fi.Size())
		if fi.Size() > limit {
			t.Errorf("%s wrote %d bytes of WAL, want at most %d", change.what, fi.Size(), limit)
		}
	}
}

// A cache further behind than the log of changes reaches (its last 1,000)
// forgets every name: a rename logged before the 1,000 others still shows.
func TestNamesForgottenPastTheLog(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "log.sqlite3")
	db := MustOpenDSN(t, path)
	alice := MustCreateUser(t, db, "alice")
	carol := MustCreateUser(t, db, "carol")
	p := MustCreatePost(t, db, alice.ID, "A post of alice's")
	readPages(t, db, p.ID, alice.ID)

	other, err := sql.Open("sqlite3", "file:"+path+"?_foreign_keys=1&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.ExecContext(ctx, `UPDATE users SET screen_name = 'alicia' WHERE id = ?`, alice.ID); err != nil {
		t.Fatal(err)
	}
	for i := range 1001 {
		if _, err := other.ExecContext(ctx, `UPDATE users SET screen_name = ? WHERE id = ?`, fmt.Sprintf("carol%d", i), carol.ID); err != nil {
			t.Fatal(err)
		}
	}
	var logged int
	if err := other.QueryRowContext(ctx, `SELECT count(*) FROM name_changes`).Scan(&logged); err != nil || logged != 1000 {
		t.Fatalf("the log holds %d changes (%v), want 1000", logged, err)
	}
	post, err := db.FindPostByID(ctx, p.ID)
	if err != nil || post.Author.ScreenName != "alicia" {
		t.Errorf("post = %+v, %v; want by alicia", post, err)
	}
}

// An older copy of the file restored in place while a server runs (with
// SQLite's backup API, as the sqlite3 shell's .restore does), then one
// rename more by another program, which gives the log's counter back the
// seq the cache had read, for another change: the pages show the
// restored names, whether or not a page was read in between.
func TestNamesForgottenAfterAnOlderCopyIsRestored(t *testing.T) {
	for _, readBetween := range []bool{false, true} {
		t.Run(fmt.Sprintf("a page read between: %v", readBetween), func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			path, older := filepath.Join(dir, "live.sqlite3"), filepath.Join(dir, "older.sqlite3")
			db := MustOpenDSN(t, path)
			alice := MustCreateUser(t, db, "alice")
			bob := MustCreateUser(t, db, "bob")
			p := MustCreatePost(t, db, alice.ID, "A post of alice's")
			other, err := sql.Open("sqlite3", "file:"+path+"?_foreign_keys=1&_busy_timeout=5000")
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			exec := func(query string, args ...any) {
				t.Helper()
				if _, err := other.ExecContext(ctx, query, args...); err != nil {
					t.Fatal(err)
				}
			}
			exec(`UPDATE users SET screen_name = 'bob0' WHERE id = ?`, bob.ID) // the log has a change
			backupFile(t, path, older)
			exec(`UPDATE users SET screen_name = 'alicia' WHERE id = ?`, alice.ID)
			readPages(t, db, p.ID, alice.ID, bob.ID) // the cache: alicia, at the log's seq of that rename
			if got := authorOf(t, db, p.ID); got != "alicia" {
				t.Fatalf("before the restore the post is by %q, want alicia", got)
			}

			backupFile(t, older, path) // in place: alice is alice again
			if readBetween {
				readPages(t, db, p.ID, alice.ID, bob.ID)
			}
			exec(`UPDATE users SET screen_name = 'bobby' WHERE id = ?`, bob.ID)
			readPages(t, db, p.ID, alice.ID, bob.ID)
			if got := authorOf(t, db, p.ID); got != "alice" {
				t.Errorf("after an older copy was restored and another user renamed, the post is by %q, want alice (the restored name)", got)
			}
			if u, err := db.FindUserByID(ctx, bob.ID); err != nil || u.ScreenName != "bobby" {
				t.Errorf("bob is %+v (%v), want bobby", u, err)
			}
		})
	}
}

// authorOf is the screen name the post page shows for post id's author.
func authorOf(t *testing.T, db *sqlite.DB, id int64) string {
	t.Helper()
	post, _, err := db.PostPage(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return post.Author.ScreenName
}

// backupFile copies the database at from onto the one at to, in place,
// with SQLite's backup API, through connections of the plain driver.
func backupFile(t *testing.T, from, to string) {
	t.Helper()
	ctx := context.Background()
	open := func(path string) (*sql.DB, *sql.Conn) {
		db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000")
		if err != nil {
			t.Fatal(err)
		}
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return db, conn
	}
	srcDB, src := open(from)
	defer srcDB.Close()
	defer src.Close()
	dstDB, dst := open(to)
	defer dstDB.Close()
	defer dst.Close()
	err := dst.Raw(func(d any) error {
		return src.Raw(func(s any) error {
			b, err := d.(*sqlite3.SQLiteConn).Backup("main", s.(*sqlite3.SQLiteConn), "main")
			if err != nil {
				return err
			}
			if _, err := b.Step(-1); err != nil {
				b.Finish()
				return err
			}
			return b.Finish()
		})
	})
	if err != nil {
		t.Fatalf("back %s up onto %s: %v", from, to, err)
	}
}
