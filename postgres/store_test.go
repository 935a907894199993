package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/pgcluster"
	"github.com/loremnews/loremnews/pgcluster/pgtest"
	"github.com/loremnews/loremnews/postgres"
	"github.com/loremnews/loremnews/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// MustOpenDB opens a fresh database, closed when the test ends.
func MustOpenDB(tb testing.TB) *postgres.DB {
	tb.Helper()
	url := pgtest.NewDatabase(tb)
	db, err := postgres.Open(context.Background(), postgres.Config{URL: url})
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// TestStore runs the suite every backend passes.
func TestStore(t *testing.T) {
	storetest.Run(t, func(tb testing.TB) loremnews.Database { return MustOpenDB(tb) })
}

// TestNoDeadlocks runs the benchmarking writes from 64 goroutines on a
// small data set, where they collide on the same rows all the time: the
// lock order must keep PostgreSQL from ever finding a deadlock, and no
// write may fail.
func TestNoDeadlocks(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	storetest.MustSeed(t, db, 5, 200)
	var wg sync.WaitGroup
	errs := make(chan error, 64*40)
	for w := range 64 {
		wg.Go(func() {
			for i := range 40 {
				var err error
				// Out of 8: 2 post creations, 3 comment creations, 1 post
				// deletion (with its comments), 2 comment deletions: the
				// tables never run out over the test's 2,560 writes.
				switch (w + i) % 8 {
				case 0, 4:
					_, err = db.Benchmark().CreatePost(ctx, loremnews.PostInput{Title: fmt.Sprintf("Deadlock probe %d-%d", w, i)})
				case 1, 5, 6:
					_, err = db.Benchmark().CreateComment(ctx, loremnews.CommentInput{Body: "Probing for deadlocks"})
				case 2:
					_, err = db.Benchmark().DeletePost(ctx)
				case 3, 7:
					_, _, err = db.Benchmark().DeleteComment(ctx)
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("write failed: %v", err)
	}
	storetest.MustBeConsistent(t, db)
	s := db.Stats()
	t.Logf("retries %d, deadlocks %d", s.Retries, s.Deadlocks)
	if s.Deadlocks != 0 {
		t.Fatalf("%d deadlocks", s.Deadlocks)
	}
}

// TestLookAlikeTitlesNeverDeadlock creates look-alike titles (one title
// key) from eight goroutines at once, round after round: one of each round
// is stored, the others are refused as taken, and PostgreSQL never finds a
// deadlock. (With the key's constraint DEFERRABLE, each insert waited at
// its statement's end for the others, and they deadlocked.)
func TestLookAlikeTitlesNeverDeadlock(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	author := storetest.MustCreateUser(t, db, "author")
	for round := range 10 {
		created, refused := storetest.Race(t, 8, func(i int) error {
			// Another case, more spaces between the words: one key.
			title := fmt.Sprintf("Look-alike%stitle %d", strings.Repeat(" ", 1+i/2), round)
			if i%2 == 1 {
				title = strings.ToUpper(title)
			}
			_, err := db.CreatePost(ctx, author.ID, loremnews.PostInput{Title: title})
			return err
		}, func(msg string) bool { return strings.Contains(msg, "already been taken") })
		if created != 1 || refused != 7 {
			t.Fatalf("round %d: %d look-alike titles stored, %d refused; want 1 and 7", round, created, refused)
		}
	}
	if s := db.Stats(); s.Deadlocks != 0 {
		t.Fatalf("%d deadlocks (%d retries) among look-alike titles created at once", s.Deadlocks, s.Retries)
	}
}

// TestLockTimeoutIsUnavailable holds a row lock longer than the writer
// timeout: the waiting write answers EUNAVAILABLE (a 503), not a 500.
func TestLockTimeoutIsUnavailable(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	db, err := postgres.Open(ctx, postgres.Config{URL: url, WriterTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	u := storetest.MustCreateUser(t, db, "locked")
	p := storetest.MustCreatePost(t, db, u.ID, "A locked post")

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM posts WHERE id = $1 FOR UPDATE`, p.ID); err != nil {
		t.Fatal(err)
	}
	_, err = db.CreateComment(ctx, p.ID, u.ID, loremnews.CommentInput{Body: "Waits for the lock"})
	storetest.WantCode(t, err, loremnews.EUNAVAILABLE)
	tx.Rollback(ctx)
	storetest.MustCreateComment(t, db, p.ID, u.ID, "After the lock is gone")
	storetest.MustBeConsistent(t, db)
}

// TestOpenErrorsNameTheProblem: a server that is not there, and a database
// that does not exist.
func TestOpenErrorsNameTheProblem(t *testing.T) {
	ctx := context.Background()
	_, err := postgres.Open(ctx, postgres.Config{URL: "postgres://nobody@127.0.0.1:1/none?connect_timeout=2"})
	if err == nil || !strings.Contains(err.Error(), "does not answer") {
		t.Fatalf("unreachable server: %v", err)
	}
	missing := pgcluster.DatabaseURL(pgtest.AdminURL(t), "no_such_database")
	_, err = postgres.Open(ctx, postgres.Config{URL: missing})
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing database: %v", err)
	}
	_, err = postgres.Open(ctx, postgres.Config{URL: "postgres://%zz"})
	if err == nil || !strings.Contains(err.Error(), "bad database URL") {
		t.Fatalf("bad URL: %v", err)
	}
}

// TestSynchronousCommitSetting: the app's synchronous_commit is set on
// every pooled connection.
func TestSynchronousCommitSetting(t *testing.T) {
	db, err := postgres.Open(context.Background(), postgres.Config{URL: pgtest.NewDatabase(t), SynchronousCommit: "off"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := db.Settings(context.Background())
	if err != nil || s["synchronous_commit"] != "off" || s["server_version"] == "" {
		t.Fatalf("settings %v, %v", s, err)
	}
}

// TestServerGoneIsUnavailable stops the server under an open store: every
// call answers EUNAVAILABLE (a 503 page), never an internal error.
func TestServerGoneIsUnavailable(t *testing.T) {
	pgtest.SkipIfMissing(t)
	ctx := context.Background()
	c, err := pgcluster.Start(ctx, pgcluster.Fast)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	db, err := postgres.Open(ctx, postgres.Config{URL: c.URL, WriterTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	storetest.MustSeed(t, db, 3, 3)
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	_, err = db.FindPostByID(ctx, 1)
	storetest.WantCode(t, err, loremnews.EUNAVAILABLE)
	_, err = db.Benchmark().CreatePost(ctx, loremnews.PostInput{Title: "Into the void"})
	storetest.WantCode(t, err, loremnews.EUNAVAILABLE)
	storetest.WantCode(t, db.Ping(ctx), loremnews.EUNAVAILABLE)
}

// TestReadSettingsDoesNotMigrate: the benchmark runner reads an admin
// database's settings, which must not create the app's tables there.
func TestReadSettingsDoesNotMigrate(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	s, err := postgres.ReadSettings(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if s["server_version"] == "" || s["synchronous_commit"] == "" {
		t.Errorf("settings %v lack server_version or synchronous_commit", s)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var tables int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Errorf("%d tables in the database after ReadSettings, want 0", tables)
	}
}
