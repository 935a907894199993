package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/loremnews/loremnews/sqlite"
)

// Every listing reads one range of one covering index and nothing else
// (no table, no other index, no sort), with the planner's statistics of
// the seed data set (100 users, 1,000 posts, ~10,000 comments) and with
// those of 100 times as much: the same statistics with every row count
// times 100, which is what ANALYZE reports on the data set seeded 100
// times larger (the averages per user and per post are the same).
func TestListingPlans(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "plans.sqlite3")
	db := MustOpenDSN(t, path)
	MustSeed(t, db, 100, 1000) // and PRAGMA optimize, which writes sqlite_stat1

	conn, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetMaxOpenConns(1)
	var stats int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_stat1 WHERE tbl IN ('posts', 'comments')`).Scan(&stats); err != nil || stats < 4 {
		t.Fatalf("%d statistics of posts and comments, %v; want the seed's ANALYZE", stats, err)
	}
	want := map[string]string{
		"front page":             "index_posts_listing",
		"posts from an id":       "index_posts_listing",
		"a user's posts":         "index_posts_on_user_id",
		"a user's comments":      "index_comments_on_user_id",
		"a user's comment count": "index_comments_on_user_id",
		"a post's comments":      "index_comments_on_post_id",
	}
	check := func(t *testing.T) {
		for name, st := range sqlite.ListingStatements {
			rows, err := conn.QueryContext(ctx, `EXPLAIN QUERY PLAN `+st.SQL, st.Args...)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var plan []string
			for rows.Next() {
				var id, parent, notused int
				var detail string
				if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			rows.Close()
			ok := regexp.MustCompile(`^SEARCH [a-z]+ USING COVERING INDEX ` + want[name] + ` \(`).MatchString
			if len(plan) != 1 || !ok(plan[0]) {
				t.Errorf("%s: plan %q, want one SEARCH of the covering index %s", name, strings.Join(plan, "; "), want[name])
			}
		}
	}
	t.Run("seed", check)
	// Rows times 100, and the connection reads the statistics again.
	if _, err := conn.ExecContext(ctx, `UPDATE sqlite_stat1
		SET stat = (CAST(stat AS INTEGER) * 100) || substr(stat, instr(stat, ' '))
		WHERE tbl IN ('users', 'posts', 'comments')`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `ANALYZE sqlite_schema`); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := conn.QueryRowContext(ctx, `SELECT CAST(stat AS INTEGER) FROM sqlite_stat1 WHERE idx = 'index_posts_listing'`).Scan(&n); err != nil || n != 100000 {
		t.Fatalf("index_posts_listing's statistics say %d rows, %v; want 100,000", n, err)
	}
	t.Run("100 times the data", check)
}
