package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"io"
	"testing"
	"time"

	"github.com/loremnews/loremnews"
)

// Test-only access to internals, for package sqlite_test.

// ReadPragmaOnEveryConn holds every read-pool connection at once (so each is
// a different one) and returns PRAGMA name's value on each.
func (db *DB) ReadPragmaOnEveryConn(tb testing.TB, name string) []string {
	tb.Helper()
	ctx := context.Background()
	n := db.readDB.Stats().MaxOpenConnections
	conns := make([]*sql.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var vals []string
	for range n {
		c, err := db.readDB.Conn(ctx)
		if err != nil {
			tb.Fatal(err)
		}
		conns = append(conns, c)
		var v string
		if err := c.QueryRowContext(ctx, "PRAGMA "+name).Scan(&v); err != nil {
			tb.Fatalf("PRAGMA %s: %v", name, err)
		}
		vals = append(vals, v)
	}
	if len(vals) == 0 {
		tb.Fatal("no connections")
	}
	return vals
}

// HoldWriterTurn occupies the writer, as a long write would, until release.
func (db *DB) HoldWriterTurn(tb testing.TB) (release func()) {
	tb.Helper()
	started, done, finished := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		db.write(context.Background(), func(context.Context, writeTx) error {
			close(started)
			<-done
			return nil
		})
	}()
	<-started
	return func() { close(done); <-finished }
}

// ExecForTest runs a statement on the write pool outside any profile logic.
func (db *DB) ExecForTest(tb testing.TB, query string, args ...any) {
	tb.Helper()
	if _, err := db.writeDB.Exec(query, args...); err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
}

// PageCount is the database's size in pages.
func (db *DB) PageCount(tb testing.TB) int {
	tb.Helper()
	var n int
	if err := db.readDB.QueryRow("PRAGMA page_count").Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

// listingTail is PostsBefore's WHERE/ORDER/LIMIT, and listingSQL the whole
// statement queryPosts builds from it, for the binding benchmark.
const (
	listingTail = `WHERE p.id < ? ORDER BY p.id DESC LIMIT ?`
	listingSQL  = `SELECT ` + postSummaryColumns + `, ` + authorColumns + `
		FROM posts p JOIN users u ON u.id = p.user_id ` + listingTail
)

// ListingThroughSQL reads PostsBefore's rows on one read connection
// through database/sql, as the store does in a write transaction.
func (db *DB) ListingThroughSQL(ctx context.Context, conn *sql.Conn, beforeID int64, limit int) ([]*loremnews.Post, error) {
	return queryPosts(ctx, conn, listingTail, beforeID, limit)
}

// ListingThroughDriver reads the same rows on the same kind of connection
// through go-sqlite3's driver interface directly, skipping database/sql
// (its locks, its Rows and Scan's conversions), to measure what that
// layer costs on this workload.
func (db *DB) ListingThroughDriver(ctx context.Context, conn *sql.Conn, beforeID int64, limit int) ([]*loremnews.Post, error) {
	var posts []*loremnews.Post
	err := conn.Raw(func(dc any) error {
		c := dc.(sqliteConn).SQLiteConnOf()
		rows, err := c.QueryContext(ctx, listingSQL, []driver.NamedValue{{Ordinal: 1, Value: beforeID}, {Ordinal: 2, Value: int64(limit)}})
		if err != nil {
			return err
		}
		defer rows.Close()
		dest := make([]driver.Value, 7)
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
			p.Author.ID, _ = dest[5].(int64)
			p.Author.ScreenName, _ = dest[6].(string)
			posts = append(posts, p)
		}
	})
	return posts, err
}

// ListingThroughRowReader reads the same rows as PostsBefore does: through
// the row reader (sqlitedb.Query), without the read slot.
func (db *DB) ListingThroughRowReader(ctx context.Context, conn *sql.Conn, beforeID int64, limit int) ([]*loremnews.Post, error) {
	return queryPosts(ctx, readConn{conn}, listingTail, beforeID, limit)
}

// ReadConn is a connection of the read pool, for the binding benchmark.
func (db *DB) ReadConn(ctx context.Context) (*sql.Conn, error) { return db.readDB.Conn(ctx) }

// ReadForTest runs fn as a read of the read pool, in its slot, as the
// store's reads run.
func (db *DB) ReadForTest(ctx context.Context, fn func() error) error {
	return db.read(ctx, func(querier) error { return fn() })
}

// EnterReadForTest takes a read slot, as a read does before its query.
func (db *DB) EnterReadForTest(ctx context.Context) (leave func(), err error) {
	return db.enterRead(ctx)
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

// SetCheckpointer turns the split profile's checkpointer on or off for the
// databases opened after it, and returns the function that restores it:
// the write-tail benchmark compares the two.
func SetCheckpointer(on bool) (restore func()) {
	spec := profiles[ProfileSplit]
	was := spec.checkpointer
	spec.checkpointer = on
	profiles[ProfileSplit] = spec
	return func() {
		spec.checkpointer = was
		profiles[ProfileSplit] = spec
	}
}

// CheckpointStats is what the checkpointer did: PASSIVE checkpoints run,
// inline ones (past the hard limit), TRUNCATEs, failures.
func (db *DB) CheckpointStats() (runs, inline, truncates, errors int64) {
	c := db.checkpointer
	if c == nil {
		return 0, 0, 0, 0
	}
	return c.runs.Load(), c.inline.Load(), c.truncates.Load(), c.errors.Load()
}
