package sqlitedb_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing/fstest"
	"time"

	"github.com/loremnews/loremnews/sqlitedb"
)

// A whole program: open a database file, create its table in Setup, write
// a row, read it back, close.
func Example() {
	dir, err := os.MkdirTemp("", "sqlitedb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	db, err := sqlitedb.Open(ctx, filepath.Join(dir, "app.db"), &sqlitedb.Options{
		Setup: func(ctx context.Context, conn *sql.Conn) error {
			_, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS notes (
				id   INTEGER PRIMARY KEY,
				body TEXT NOT NULL
			)`)
			return err
		},
	})
	if err != nil {
		log.Fatal(err)
	}

	// Write returns once the transaction has committed.
	err = db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO notes (body) VALUES (?)`, "hello, world")
		return err
	})
	if err != nil {
		log.Fatal(err)
	}

	var body string
	err = db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
		return rx.QueryRow(ctx, `SELECT body FROM notes WHERE id = 1`).Scan(&body)
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(body)

	if err := db.Close(); err != nil {
		log.Fatal(err)
	}
	// Output: hello, world
}

// notes is an http.Handler: GET lists the notes (a read), POST adds one (a
// write).
type notes struct{ db *sqlitedb.DB }

func (h notes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		var list []string
		err := h.db.Read(r.Context(), func(ctx context.Context, rx *sqlitedb.Rx) error {
			rows, err := rx.Query(ctx, `SELECT body FROM notes ORDER BY id`)
			if err != nil {
				return err
			}
			for rows.Next() {
				var body string
				if err := rows.Scan(&body); err != nil {
					return err
				}
				list = append(list, body)
			}
			return nil
		})
		if err != nil {
			serveError(w, err)
			return
		}
		fmt.Fprintln(w, strings.Join(list, "; "))
	case http.MethodPost:
		body := r.FormValue("body")
		if body == "" {
			http.Error(w, "a note needs a body", http.StatusUnprocessableEntity)
			return
		}
		err := h.db.Write(r.Context(), func(ctx context.Context, tx *sqlitedb.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO notes (body) VALUES (?)`, body)
			return err
		})
		if err != nil {
			serveError(w, err)
			return
		}
		http.Redirect(w, r, "/notes", http.StatusSeeOther)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// serveError answers 503 when the database could not take the request now
// (locked by another process, no turn within Options.Timeout, closing for
// shutdown), so the client comes back later; anything else is a bug: 500.
func serveError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, sqlitedb.ErrBusy), errors.Is(err, sqlitedb.ErrTimeout), errors.Is(err, sqlitedb.ErrClosed):
		w.Header().Set("Retry-After", "1")
		http.Error(w, "busy, try again", http.StatusServiceUnavailable)
	default:
		log.Print(err)
		http.Error(w, "internal error", http.StatusInternalServerError)
	}
}

// An HTTP handler that reads in Read and writes in Write, and answers 503
// when the database cannot serve a request now.
func Example_httpHandler() {
	dir, err := os.MkdirTemp("", "sqlitedb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	db, err := sqlitedb.Open(context.Background(), filepath.Join(dir, "app.db"), &sqlitedb.Options{
		Setup: func(ctx context.Context, conn *sql.Conn) error {
			_, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`)
			return err
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	h := notes{db}

	do := func(method, body string) {
		var req *http.Request
		if method == http.MethodPost {
			req = httptest.NewRequest(method, "/notes", strings.NewReader(url.Values{"body": {body}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		} else {
			req = httptest.NewRequest(method, "/notes", nil)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		out := strings.TrimSpace(rec.Body.String())
		if loc := rec.Header().Get("Location"); loc != "" {
			out = "Location: " + loc
		}
		fmt.Printf("%s %d %s\n", method, rec.Code, out)
	}
	do(http.MethodPost, "first")
	do(http.MethodPost, "second")
	do(http.MethodGet, "")
	db.Close() // as at shutdown: what still arrives gets ErrClosed
	do(http.MethodGet, "")
	do(http.MethodPost, "third")
	// Output:
	// POST 303 Location: /notes
	// POST 303 Location: /notes
	// GET 200 first; second
	// GET 503 busy, try again
	// POST 503 busy, try again
}

// schema is the schema's history, one file a migration, applied in name
// order. In a program it is usually the files of a directory embedded
// with //go:embed migrations/*.sql. A migration, once released, is never
// edited; a change is a new one.
var schema = fstest.MapFS{
	"migrations/0001_users.sql":     {Data: []byte(`CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);`)},
	"migrations/0002_last_seen.sql": {Data: []byte(`ALTER TABLE users ADD COLUMN last_seen_at INTEGER;`)},
	"migrations/0003_index.sql":     {Data: []byte(`CREATE INDEX users_by_last_seen ON users (last_seen_at);`)},
}

// Migrations in Setup: Migrate applies each migration once, in a
// transaction of its own with its record in MigrationsTable
// (schema_migrations). Opening the database again applies nothing.
func ExampleMigrate() {
	dir, err := os.MkdirTemp("", "sqlitedb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "app.db")
	ctx := context.Background()

	for _, run := range []string{"first", "second"} {
		db, err := sqlitedb.Open(ctx, path, &sqlitedb.Options{Setup: sqlitedb.Migrate(schema, "migrations/*.sql")})
		if err != nil {
			log.Fatal(err)
		}
		var applied string
		err = db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
			return rx.QueryRow(ctx, `SELECT group_concat(version, ', ') FROM (SELECT version FROM `+
				sqlitedb.MigrationsTable+` ORDER BY version)`).Scan(&applied)
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(run, "open:", applied)
		if err := db.Close(); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// first open: migrations/0001_users.sql, migrations/0002_last_seen.sql, migrations/0003_index.sql
	// second open: migrations/0001_users.sql, migrations/0002_last_seen.sql, migrations/0003_index.sql
}

// An online backup: the copy is one consistent snapshot, taken while
// writes go on. It is a complete database file of its own.
func ExampleDB_Backup() {
	dir, err := os.MkdirTemp("", "sqlitedb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	db, err := sqlitedb.Open(ctx, filepath.Join(dir, "app.db"), &sqlitedb.Options{
		Setup: func(ctx context.Context, conn *sql.Conn) error {
			_, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY, at INTEGER NOT NULL)`)
			return err
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	insert := func(ctx context.Context, tx *sqlitedb.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO events (at) VALUES (?)`, time.Now().UnixNano())
		return err
	}
	for range 1000 {
		if err := db.Write(ctx, insert); err != nil {
			log.Fatal(err)
		}
	}

	// Keep writing while the backup runs.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := db.Write(ctx, insert); err != nil {
				log.Print(err)
				return
			}
		}
	})
	copyPath := filepath.Join(dir, "backup.db")
	if err := db.Backup(ctx, copyPath, &sqlitedb.BackupOptions{PagesPerStep: 16, Pause: time.Millisecond}); err != nil {
		log.Fatal(err)
	}
	close(stop)
	wg.Wait()

	backup, err := sqlitedb.Open(ctx, copyPath, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer backup.Close()
	var rows int
	var check string
	err = backup.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
		if err := rx.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&rows); err != nil {
			return err
		}
		return rx.QueryRow(ctx, `PRAGMA integrity_check`).Scan(&check)
	})
	if err != nil {
		log.Fatal(err)
	}
	// How many rows written during the backup made it in depends on
	// timing; the 1,000 written before it are all there.
	fmt.Println("rows written before the backup, all in the copy:", rows >= 1000)
	fmt.Println("integrity check:", check)
	// Output:
	// rows written before the backup, all in the copy: true
	// integrity check: ok
}

// Coalesced writes: many requests each record that a user was seen. Such a
// write cannot fail on its own, so the touches waiting at one moment share
// one transaction, and each caller still returns only after its commit.
func ExampleDB_Coalesce() {
	dir, err := os.MkdirTemp("", "sqlitedb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	db, err := sqlitedb.Open(ctx, filepath.Join(dir, "app.db"), &sqlitedb.Options{
		Setup: func(ctx context.Context, conn *sql.Conn) error {
			_, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS users (
				id           INTEGER PRIMARY KEY,
				name         TEXT NOT NULL,
				last_seen_at INTEGER
			)`)
			return err
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	err = db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO users (name) VALUES ('ada'), ('grace'), ('edsger')`)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}

	// 300 requests at once, each touching one of the three users.
	var wg sync.WaitGroup
	for i := range 300 {
		wg.Go(func() {
			err := db.Coalesce(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
				_, err := tx.Exec(ctx, `UPDATE users SET last_seen_at = ? WHERE id = ?`, time.Now().UnixNano(), 1+i%3)
				return err
			})
			if err != nil {
				log.Print(err)
			}
		})
	}
	wg.Wait()

	var seen int
	err = db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
		return rx.QueryRow(ctx, `SELECT count(*) FROM users WHERE last_seen_at IS NOT NULL`).Scan(&seen)
	})
	if err != nil {
		log.Fatal(err)
	}
	// How many transactions the 301 writes took depends on how they
	// arrived: db.Stats().Writer.Commits counts them.
	fmt.Println("users seen:", seen)
	fmt.Println("writes run:", db.Stats().Writer.Writes)
	// Output:
	// users seen: 3
	// writes run: 301
}

// A read: every query of the function sees one snapshot. The handle's
// Query reads all the rows in one call into SQLite, and Scan copies each
// column straight into its variable.
func ExampleDB_Read() {
	dir, err := os.MkdirTemp("", "sqlitedb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	db, err := sqlitedb.Open(ctx, filepath.Join(dir, "app.db"), &sqlitedb.Options{
		Setup: func(ctx context.Context, conn *sql.Conn) error {
			_, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS posts (
				id     INTEGER PRIMARY KEY,
				title  TEXT NOT NULL,
				points INTEGER NOT NULL,
				url    TEXT
			)`)
			return err
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	err = db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO posts (title, points, url) VALUES
			('SQLite in production', 42, 'https://sqlite.org/'),
			('Ask: one writer enough?', 17, NULL),
			('WAL mode explained', 8, 'https://sqlite.org/wal.html')`)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}

	err = db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
		rows, err := rx.Query(ctx, `SELECT id, title, points, url FROM posts WHERE points >= ? ORDER BY points DESC`, 10)
		if err != nil {
			return err
		}
		for rows.Next() {
			var (
				id, points int64
				title      string
				link       sql.NullString // NULL into a string is an error, as in database/sql
			)
			if err := rows.Scan(&id, &title, &points, &link); err != nil {
				return err
			}
			fmt.Printf("%d %q %d points %s\n", id, title, points, link.String)
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// 1 "SQLite in production" 42 points https://sqlite.org/
	// 2 "Ask: one writer enough?" 17 points
}

// openExample opens a database in a new temporary directory with Setup
// running schema, and returns it with a function that closes it and
// removes the directory.
func openExample(schema string) (*sqlitedb.DB, func()) {
	dir, err := os.MkdirTemp("", "sqlitedb-example")
	if err != nil {
		log.Fatal(err)
	}
	db, err := sqlitedb.Open(context.Background(), filepath.Join(dir, "app.db"), &sqlitedb.Options{
		Setup: func(ctx context.Context, conn *sql.Conn) error {
			_, err := conn.ExecContext(ctx, schema)
			return err
		},
	})
	if err != nil {
		os.RemoveAll(dir)
		log.Fatal(err)
	}
	return db, func() {
		if err := db.Close(); err != nil {
			log.Print(err)
		}
		os.RemoveAll(dir)
	}
}

// A write: its statements run on tx, in one transaction, and Write returns
// once it has committed. If the function returns an error, nothing it did
// is kept, and Write returns that error.
func ExampleDB_Write() {
	db, done := openExample(`CREATE TABLE accounts (name TEXT PRIMARY KEY, balance INTEGER NOT NULL CHECK (balance >= 0));
		INSERT INTO accounts VALUES ('ada', 100), ('grace', 0)`)
	defer done()
	ctx := context.Background()

	transfer := func(from, to string, amount int64) error {
		return db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
			res, err := tx.Exec(ctx, `UPDATE accounts SET balance = balance - ? WHERE name = ?`, amount, from)
			if err != nil {
				return err // the CHECK failed: not enough money
			}
			if n, _ := res.RowsAffected(); n != 1 {
				return fmt.Errorf("no account %q", from)
			}
			res, err = tx.Exec(ctx, `UPDATE accounts SET balance = balance + ? WHERE name = ?`, amount, to)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n != 1 {
				return fmt.Errorf("no account %q", to) // the debit above is rolled back too
			}
			return nil
		})
	}
	fmt.Println("ada to grace, 30:", transfer("ada", "grace", 30))
	fmt.Println("ada to edsger, 30:", transfer("ada", "edsger", 30))
	fmt.Println("grace to ada, 50:", transfer("grace", "ada", 50) != nil)

	err := db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
		rows, err := rx.Query(ctx, `SELECT name, balance FROM accounts ORDER BY name`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var name string
			var balance int64
			if err := rows.Scan(&name, &balance); err != nil {
				return err
			}
			fmt.Println(name, balance)
		}
		return rows.Err()
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// ada to grace, 30: <nil>
	// ada to edsger, 30: no account "edsger"
	// grace to ada, 50: true
	// ada 70
	// grace 30
}

// QueryRow reads one row; with none, Scan answers sql.ErrNoRows, as
// database/sql's does.
func ExampleRx_QueryRow() {
	db, done := openExample(`CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
		INSERT INTO users VALUES (1, 'ada')`)
	defer done()

	name := func(id int64) (string, error) {
		var name string
		err := db.Read(context.Background(), func(ctx context.Context, rx *sqlitedb.Rx) error {
			return rx.QueryRow(ctx, `SELECT name FROM users WHERE id = ?`, id).Scan(&name)
		})
		return name, err
	}
	fmt.Println(name(1))
	_, err := name(2)
	fmt.Println(errors.Is(err, sql.ErrNoRows))
	// Output:
	// ada <nil>
	// true
}

// The escape hatch: Conn is the transaction's *sql.Conn, for what the
// handle lacks, here a time.Time, which the handle's arguments and Scan do
// not take and database/sql and the driver convert.
func ExampleRx_Conn() {
	db, done := openExample(`CREATE TABLE events (id INTEGER PRIMARY KEY, at DATETIME NOT NULL)`)
	defer done()
	ctx := context.Background()

	launch := time.Date(2004, time.August, 17, 12, 30, 0, 0, time.UTC)
	err := db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
		_, err := tx.Conn().ExecContext(ctx, `INSERT INTO events (at) VALUES (?)`, launch)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	var at time.Time
	err = db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
		return rx.Conn().QueryRowContext(ctx, `SELECT at FROM events WHERE id = 1`).Scan(&at)
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(at.Equal(launch), at.Format(time.RFC3339))
	// Output: true 2004-08-17T12:30:00Z
}

// A database opened read-only (mode=ro): a report, a second process that
// only reads, or a file on read-only media (immutable=1). Writes are
// ErrReadOnly.
func ExampleOpen_readOnly() {
	dir, err := os.MkdirTemp("", "sqlitedb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "app.db")
	ctx := context.Background()

	db, err := sqlitedb.Open(ctx, path, &sqlitedb.Options{Setup: sqlitedb.Migrate(fstest.MapFS{
		"migrations/0001_notes.sql": {Data: []byte(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);
			INSERT INTO notes (body) VALUES ('written before')`)},
	}, "migrations/*.sql")})
	if err != nil {
		log.Fatal(err)
	}
	db.Close()

	ro, err := sqlitedb.Open(ctx, "file:"+path+"?mode=ro", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ro.Close()
	var body string
	err = ro.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
		return rx.QueryRow(ctx, `SELECT body FROM notes`).Scan(&body)
	})
	fmt.Println(body, err)
	err = ro.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO notes (body) VALUES ('refused')`)
		return err
	})
	fmt.Println(errors.Is(err, sqlitedb.ErrReadOnly))
	// Output:
	// written before <nil>
	// true
}

// A broken constraint by name: here a UNIQUE one, told apart from every
// other error to answer "already taken" instead of a failure.
func ExampleIsUniqueViolation() {
	dir, err := os.MkdirTemp("", "sqlitedb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	db, err := sqlitedb.Open(ctx, filepath.Join(dir, "app.db"), &sqlitedb.Options{Setup: sqlitedb.Migrate(fstest.MapFS{
		"migrations/0001_users.sql": {Data: []byte(`CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)`)},
	}, "migrations/*.sql")})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	signUp := func(name string) error {
		return db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO users (name) VALUES (?)`, name)
			if sqlitedb.IsUniqueViolation(err) {
				return fmt.Errorf("the name %s is taken", name)
			}
			return err
		})
	}
	fmt.Println(signUp("alice"))
	fmt.Println(signUp("alice"))
	// Output:
	// <nil>
	// the name alice is taken
}
