package sqlite

import (
	"context"
	"database/sql/driver"
	"io"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/internal/nanotime"
	"github.com/loremnews/loremnews/sqlitedb"
)

// Test-only access to internals, for package sqlite_test.

// ReadPragmaOnEveryConn holds every read connection at once (reads that
// wait until all are inside, so each is on a different connection) and
// returns PRAGMA name's value on each.
func (db *DB) ReadPragmaOnEveryConn(tb testing.TB, name string) []string {
	tb.Helper()
	n := db.eng.Stats().ReadPool.MaxOpenConnections
	var (
		mu   sync.Mutex
		vals []string
		wg   sync.WaitGroup
	)
	inside := make(chan struct{}, n)
	all := make(chan struct{})
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			errs <- db.eng.Read(context.Background(), func(ctx context.Context, q Querier) error {
				var v string
				if err := q.QueryRow(ctx, "PRAGMA "+name).Scan(&v); err != nil {
					return err
				}
				mu.Lock()
				vals = append(vals, v)
				mu.Unlock()
				inside <- struct{}{}
				<-all
				return nil
			})
		})
	}
	for range n {
		select {
		case <-inside:
		case err := <-errs:
			tb.Fatalf("PRAGMA %s: %v", name, err)
		}
	}
	close(all)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			tb.Fatalf("PRAGMA %s: %v", name, err)
		}
	}
	return vals
}

// HoldWriterTurn occupies the writer, as a long write would, until release.
func (db *DB) HoldWriterTurn(tb testing.TB) (release func()) {
	tb.Helper()
	started, done, finished := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		db.write(context.Background(), func(context.Context, Execer) error {
			close(started)
			<-done
			return nil
		})
	}()
	<-started
	return func() { close(done); <-finished }
}

// ExecForTest runs a statement as a write of its own.
func (db *DB) ExecForTest(tb testing.TB, query string, args ...any) {
	tb.Helper()
	err := db.eng.Write(context.Background(), func(ctx context.Context, tx Execer) error {
		_, err := tx.Exec(ctx, query, args...)
		return err
	})
	if err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
}

// PageCount is the database's size in pages.
func (db *DB) PageCount(tb testing.TB) int {
	tb.Helper()
	var n int
	err := db.eng.Read(context.Background(), func(ctx context.Context, q Querier) error {
		return q.QueryRow(ctx, "PRAGMA page_count").Scan(&n)
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// listingTail is PostsBefore's WHERE/ORDER/LIMIT, and listingSQL the whole
// statement queryPosts builds from it, for the binding benchmark.
const (
	listingTail = frontPageTail
	listingSQL  = postsListingSQL + listingTail
)

// ListingThroughDriver reads the same rows on the same kind of connection
// through go-sqlite3's driver interface directly, skipping database/sql
// (its locks, its Rows and Scan's conversions), to measure what that
// layer costs on this workload.
func (db *DB) ListingThroughDriver(ctx context.Context, rx *sqlitedb.Rx, beforeID int64, limit int) ([]*loremnews.Post, error) {
	var posts []*loremnews.Post
	err := rx.Conn().Raw(func(dc any) error {
		rows, err := dc.(driver.QueryerContext).QueryContext(ctx, listingSQL, []driver.NamedValue{{Ordinal: 1, Value: beforeID}, {Ordinal: 2, Value: int64(limit)}})
		if err != nil {
			return err
		}
		defer rows.Close()
		dest := make([]driver.Value, 5)
		for {
			if err := rows.Next(dest); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
			p := &loremnews.Post{Author: &loremnews.User{}}
			p.ID, _ = dest[0].(int64)
			p.UserID, _ = dest[1].(int64)
			p.Title, _ = dest[2].(string)
			n, _ := dest[3].(int64)
			p.CommentsCount = int(n)
			nanos, _ := dest[4].(int64)
			p.CreatedAt = time.Unix(0, nanos).UTC()
			p.Author.ID = p.UserID
			posts = append(posts, p)
		}
	})
	if err != nil {
		return nil, err
	}
	return posts, db.fillAuthors(ctx, rx, posts)
}

// fillAuthors gives the posts their authors' screen names as queryPosts
// does.
func (db *DB) fillAuthors(ctx context.Context, rx *sqlitedb.Rx, posts []*loremnews.Post) error {
	authors := make([]*loremnews.User, len(posts))
	for i, p := range posts {
		authors[i] = p.Author
	}
	return db.names.fill(ctx, sqlitedbRx{rx}, authors, nil)
}

// ListingThroughHandle reads the same rows as PostsBefore does: through
// sqlitedb's handle (Rx.Query).
func (db *DB) ListingThroughHandle(ctx context.Context, rx *sqlitedb.Rx, beforeID int64, limit int) ([]*loremnews.Post, error) {
	return queryPosts(ctx, sqlitedbRx{rx}, db.names, listingTail, beforeID, limit)
}

// ListingThroughSQL reads PostsBefore's rows through database/sql.
func (db *DB) ListingThroughSQL(ctx context.Context, rx *sqlitedb.Rx, beforeID int64, limit int) ([]*loremnews.Post, error) {
	rows, err := rx.Conn().QueryContext(ctx, listingSQL, beforeID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var posts []*loremnews.Post
	for rows.Next() {
		p := &loremnews.Post{Author: &loremnews.User{}}
		if err := rows.Scan(&p.ID, &p.UserID, &p.Title, &p.CommentsCount, nanotime.Into(&p.CreatedAt)); err != nil {
			return nil, err
		}
		p.Author.ID = p.UserID
		posts = append(posts, p)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return posts, db.fillAuthors(ctx, rx, posts)
}

// OnReadConn runs fn on one read connection, in a read transaction (the
// sqlitedb profiles only).
func (db *DB) OnReadConn(ctx context.Context, fn func(*sqlitedb.Rx) error) error {
	return db.eng.(sqlitedbEngine).db.Read(ctx, func(_ context.Context, rx *sqlitedb.Rx) error { return fn(rx) })
}

// MigrationSQL is the body of the embedded migration with that file name
// ("0001_create_tables.sql").
func MigrationSQL(name string) string {
	b, err := migrationFS.ReadFile("migrations/" + name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// ListingStatements are the statements of the listings, by what they
// list, each with arguments to plan it with.
var ListingStatements = map[string]struct {
	SQL  string
	Args []any
}{
	"front page":             {postsListingSQL + frontPageTail, []any{int64(500), 100}},
	"posts from an id":       {postsListingSQL + fromIDTail, []any{int64(500), 100}},
	"a user's posts":         {userPostsSQL, []any{int64(5), int64(math.MaxInt64), 100}},
	"a user's comments":      {userCommentsSQL, []any{int64(5), int64(math.MaxInt64), 100}},
	"a user's comment count": {userCommentCountSQL, []any{int64(5)}},
	"a post's comments":      {postCommentsSQL, []any{int64(5), int64(math.MaxInt64), 20}},
}
