package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// Another program on the file (here the plain driver, as a script would
// write) renames a user, retitles a post, and inserts a post and a comment
// without the copies of names and titles it does not know of: the
// triggers of migration 0007 keep every copy right, so the pages show what
// the rows say and CheckConsistency finds nothing wrong.
func TestCopiesFollowOtherProgramsWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "copies.sqlite3")
	db := MustOpenDSN(t, path, "")
	alice := MustCreateUser(t, db, "alice")
	bob := MustCreateUser(t, db, "bob")
	p := MustCreatePost(t, db, alice.ID, "A post of alice's")
	MustCreateComment(t, db, p.ID, bob.ID, "Bob comments")

	other, err := sql.Open("sqlite3", "file:"+path+"?_foreign_keys=1&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var newPost int64
	for _, s := range []struct {
		query string
		args  []any
	}{
		{`UPDATE users SET screen_name = 'alicia' WHERE id = ?`, []any{alice.ID}},
		{`UPDATE posts SET title = 'Retitled elsewhere' WHERE id = ?`, []any{p.ID}},
		{`INSERT INTO posts (user_id, title, created_at, updated_at) VALUES (?, 'Posted elsewhere', 0, 0)`, []any{bob.ID}},
		{`INSERT INTO comments (post_id, user_id, body, created_at, updated_at) VALUES (?, ?, 'Commented elsewhere', 0, 0)`, []any{p.ID, alice.ID}},
		{`INSERT INTO comments (post_id, user_id, body, created_at, updated_at, author_name, post_title)
			VALUES (?, ?, 'Wrong copies given', 0, 0, 'mallory', 'Some other title')`, []any{p.ID, bob.ID}},
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

	c := MustBeConsistent(t, db)
	if c.WrongCopies != 0 {
		t.Errorf("%d wrong copies", c.WrongCopies)
	}
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
// foreign keys off, as the sqlite3 shell runs, leaves no stale copy of the
// name or title in the rows that point to it.
func TestCopiesFollowAReplaceByAnotherProgram(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "copies.sqlite3")
	db := MustOpenDSN(t, path, "")
	alice := MustCreateUser(t, db, "alice")
	bob := MustCreateUser(t, db, "bob")
	p := MustCreatePost(t, db, alice.ID, "A post of alice's")
	MustCreateComment(t, db, p.ID, bob.ID, "Bob comments")
	MustCreateComment(t, db, p.ID, alice.ID, "Alice answers")

	other, err := sql.Open("sqlite3", "file:"+path+"?_foreign_keys=0&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
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

	if c := MustBeConsistent(t, db); c.WrongCopies != 0 {
		t.Errorf("%d wrong copies after another program replaced a post and a user", c.WrongCopies)
	}
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
}
