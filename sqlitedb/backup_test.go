package sqlitedb_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/loremnews/loremnews/sqlitedb"
)

// A paced backup holds one snapshot while writes go on between its steps:
// it finishes, every write beside it succeeds, and the copy holds a prefix
// of the writes, those committed before it began. Without the snapshot
// SQLite would start the copy over after each write.
func TestBackupWhileWriting(t *testing.T) {
	for _, memoryMap := range []bool{false, true} {
		t.Run(fmt.Sprintf("MemoryMap=%v", memoryMap), func(t *testing.T) {
			ctx := context.Background()
			db, _ := openDB(t, &sqlitedb.Options{MemoryMap: memoryMap})
			createT(t, db)
			pad(t, db, 300)
			for i := range 100 {
				mustExec(t, db, `INSERT INTO t (n) VALUES (?)`, i)
			}
			var committed atomic.Int64 // rows of t committed: 0 … committed-1
			committed.Store(100)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				for i := 100; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if err := db.Write(ctx, insert(i)); err != nil {
						t.Errorf("a write during the backup: %v", err)
						return
					}
					committed.Store(int64(i + 1))
				}
			})

			var steps []progressCall
			var atFirstStep int64
			path := filepath.Join(t.TempDir(), "backup.db")
			err := db.Backup(ctx, path, &sqlitedb.BackupOptions{
				PagesPerStep: 8,
				Pause:        5 * time.Millisecond,
				Progress: func(copied, total int) {
					steps = append(steps, progressCall{copied, total})
					if len(steps) == 1 {
						// Writes commit while the copy is under way.
						atFirstStep = committed.Load()
						waitFor(t, "20 writes to commit between the backup's steps", func() bool {
							return committed.Load() >= atFirstStep+20
						})
					}
				},
			})
			close(stop)
			waitGroup(t, &wg, "the writes to stop")
			if err != nil {
				t.Fatalf("backup: %v", err)
			}
			checkProgress(t, steps, 8)
			if len(steps) < 5 {
				t.Errorf("%d steps of 8 pages, want more: %v", len(steps), steps)
			}
			if err := db.Backup(ctx, path, nil); err == nil || !strings.Contains(err.Error(), path+" already exists") {
				t.Fatalf("a backup onto an existing file: %v, want it refused, naming the file", err)
			}

			backup := openBackup(t, path)
			if got := queryInt(t, backup, `PRAGMA page_count`); got != int64(steps[len(steps)-1].total) {
				t.Errorf("the copy has %d pages, Progress said %d", got, steps[len(steps)-1].total)
			}
			if got := queryInt(t, backup, `SELECT count(*) FROM pad`); got != 300 {
				t.Errorf("the copy holds %d rows of pad, want 300", got)
			}
			// One snapshot: the rows 0 … n-1, none missing, for some n ≥ 100,
			// and none of the writes that committed during the copy.
			n := queryInt(t, backup, `SELECT count(*) FROM t`)
			if last := queryInt(t, backup, `SELECT max(n) FROM t`); n < 100 || last != n-1 {
				t.Fatalf("the copy holds %d rows up to %d; want a prefix of the writes, at least the first 100", n, last)
			}
			if n >= atFirstStep+20 {
				t.Fatalf("the copy holds %d rows; the writes committed after its first step (from row %d on) are in it, so it is not the snapshot it began with", n, atFirstStep+1)
			}
		})
	}
}

// Progress reports each step, ending with the whole copy; Pause spaces
// the steps; no temporary file is left, and the directory is created.
func TestBackupProgress(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t, nil)
	createT(t, db)
	pad(t, db, 100)
	pages := int(queryInt(t, db, `PRAGMA page_count`))
	if pages < 20 {
		t.Fatalf("the database has %d pages, want enough for several steps", pages)
	}
	for _, tc := range []struct {
		name      string
		opts      *sqlitedb.BackupOptions
		perStep   int // pages per step expected; 0: one step
		withCalls bool
	}{
		{"nil options", nil, 0, false},
		{"defaults", &sqlitedb.BackupOptions{}, 0, true},
		{"4 pages a step", &sqlitedb.BackupOptions{PagesPerStep: 4}, 4, true},
		{"paused", &sqlitedb.BackupOptions{PagesPerStep: 4, Pause: 5 * time.Millisecond}, 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var steps []progressCall
			if tc.opts != nil {
				tc.opts.Progress = func(copied, total int) { steps = append(steps, progressCall{copied, total}) }
			}
			dir := filepath.Join(t.TempDir(), "not", "yet")
			path := filepath.Join(dir, "backup.db")
			if err := db.Backup(ctx, path, tc.opts); err != nil {
				t.Fatalf("backup: %v", err)
			}
			if tc.withCalls {
				checkProgress(t, steps, tc.perStep)
				if total := steps[len(steps)-1].total; total != pages {
					t.Errorf("Progress reported %d pages in all, the database has %d", total, pages)
				}
				want := 1
				if tc.perStep > 0 {
					want = (pages + tc.perStep - 1) / tc.perStep
				}
				if len(steps) != want {
					t.Errorf("Progress was called %d times, want once per step: %d", len(steps), want)
				}
			}
			if names := dirNames(t, dir); len(names) != 1 || names[0] != "backup.db" {
				t.Errorf("the directory holds %v, want the copy alone", names)
			}
			if got := queryInt(t, openBackup(t, path), `SELECT count(*) FROM pad`); got != 100 {
				t.Errorf("the copy holds %d rows of pad, want 100", got)
			}
		})
	}
}

// A backup whose ctx ends, between steps or during a pause, returns the
// ctx's error and leaves nothing behind; the next one succeeds.
func TestBackupCanceled(t *testing.T) {
	db, _ := openDB(t, nil)
	createT(t, db)
	pad(t, db, 100)
	for _, tc := range []struct {
		name  string
		pause time.Duration
		after int // cancel in the Progress call of this step; 0: before the backup
	}{
		{"before", 0, 0},
		{"between steps", 0, 2},
		{"during a pause", time.Hour, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.after == 0 {
				cancel()
			}
			calls := 0
			dir := t.TempDir()
			path := filepath.Join(dir, "backup.db")
			err := db.Backup(ctx, path, &sqlitedb.BackupOptions{PagesPerStep: 4, Pause: tc.pause, Progress: func(copied, total int) {
				if calls++; calls == tc.after {
					cancel()
				}
			}})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("backup with its ctx canceled: %v, want context.Canceled", err)
			}
			if calls != tc.after {
				t.Errorf("%d steps ran, want %d: a step after the cancellation", calls, tc.after)
			}
			if names := dirNames(t, dir); len(names) != 0 {
				t.Errorf("the directory holds %v after a canceled backup, want nothing", names)
			}
			if err := db.Backup(context.Background(), path, nil); err != nil {
				t.Fatalf("a backup after a canceled one: %v", err)
			}
		})
	}
}

// The copy is no more readable than the database file, nor than 0644.
func TestBackupFileMode(t *testing.T) {
	ctx := context.Background()
	db, path := openDB(t, nil)
	createT(t, db)
	umask := umask(t)
	for _, mode := range []fs.FileMode{0o600, 0o640, 0o644, 0o664, 0o666} {
		t.Run(mode.String(), func(t *testing.T) {
			if err := os.Chmod(path, mode); err != nil {
				t.Fatal(err)
			}
			backup := filepath.Join(t.TempDir(), "backup.db")
			if err := db.Backup(ctx, backup, nil); err != nil {
				t.Fatalf("backup: %v", err)
			}
			fi, err := os.Stat(backup)
			if err != nil {
				t.Fatal(err)
			}
			if want := mode & 0o644 &^ umask; fi.Mode().Perm() != want {
				t.Errorf("the copy of a %v file is %v, want %v", mode, fi.Mode().Perm(), want)
			}
		})
	}
}

// A database opened read-only can be backed up: the backup only reads.
func TestBackupReadOnly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "test.db")
	rw, err := sqlitedb.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	createT(t, rw)
	pad(t, rw, 50)
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := sqlitedb.Open(ctx, "file:"+path+"?mode=ro", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(t, ignoreError(ro.Close))
	backupPath := filepath.Join(t.TempDir(), "backup.db")
	var steps []progressCall
	err = ro.Backup(ctx, backupPath, &sqlitedb.BackupOptions{PagesPerStep: 4, Progress: func(copied, total int) {
		steps = append(steps, progressCall{copied, total})
	}})
	if err != nil {
		t.Fatalf("backup of a read-only database: %v", err)
	}
	checkProgress(t, steps, 4)
	if got := queryInt(t, openBackup(t, backupPath), `SELECT count(*) FROM pad`); got != 50 {
		t.Errorf("the copy holds %d rows of pad, want 50", got)
	}
}

// With a rollback journal the copy's read lock would keep writers waiting,
// so the copy is made in one step, whatever the options say.
func TestBackupRollbackJournal(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t, &sqlitedb.Options{Pragmas: []sqlitedb.Pragma{{Name: "journal_mode", Value: "DELETE"}}})
	createT(t, db)
	pad(t, db, 50)
	var steps []progressCall
	path := filepath.Join(t.TempDir(), "backup.db")
	err := db.Backup(ctx, path, &sqlitedb.BackupOptions{PagesPerStep: 4, Pause: time.Hour, Progress: func(copied, total int) {
		steps = append(steps, progressCall{copied, total})
	}})
	if err != nil {
		t.Fatalf("backup: %v", err)
	}
	if len(steps) != 1 || steps[0].copied != steps[0].total || steps[0].total < 12 {
		t.Errorf("Progress calls %v, want one, of the whole database", steps)
	}
	if got := queryInt(t, openBackup(t, path), `SELECT count(*) FROM pad`); got != 50 {
		t.Errorf("the copy holds %d rows of pad, want 50", got)
	}
}

// A backup that cannot create its directory fails, naming the problem,
// and leaves nothing.
func TestBackupBadDirectory(t *testing.T) {
	db, _ := openDB(t, nil)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := db.Backup(context.Background(), filepath.Join(file, "backup.db"), nil); err == nil {
		t.Fatal("a backup into a directory that is a file succeeded")
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("the directory holds %v, want the file alone", names)
	}
}

// progressCall is one call of BackupOptions.Progress.
type progressCall struct{ copied, total int }

// checkProgress checks the calls of a backup's Progress: at least one,
// the same total in each, copied rising by perStep pages a step (by any
// amount if perStep is 0) and ending at total.
func checkProgress(t *testing.T, steps []progressCall, perStep int) {
	t.Helper()
	if len(steps) == 0 {
		t.Fatal("Progress was never called")
	}
	total := steps[0].total
	for i, s := range steps {
		switch {
		case s.total != total:
			t.Fatalf("Progress call %d: total %d, was %d: %v", i, s.total, total, steps)
		case perStep > 0 && s.copied != min((i+1)*perStep, total):
			t.Fatalf("Progress call %d: %d pages copied, want %d: %v", i, s.copied, min((i+1)*perStep, total), steps)
		case i > 0 && s.copied < steps[i-1].copied:
			t.Fatalf("Progress call %d: copied went down: %v", i, steps)
		}
	}
	if last := steps[len(steps)-1]; last.copied != last.total {
		t.Fatalf("the last Progress call says %d of %d pages copied, want all", last.copied, last.total)
	}
}

// pad inserts n rows of 1,000 random bytes into table pad (created if
// needed), in one write, so the database has pages enough for several
// steps of a backup.
func pad(tb testing.TB, db *sqlitedb.DB, n int) {
	tb.Helper()
	mustExec(tb, db, `CREATE TABLE IF NOT EXISTS pad (b BLOB NOT NULL)`)
	mustExec(tb, db, `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ?)
		INSERT INTO pad (b) SELECT randomblob(1000) FROM c`, n)
}

// openBackup opens a backup, closed when the test ends, and checks its
// integrity.
func openBackup(tb testing.TB, path string) *sqlitedb.DB {
	tb.Helper()
	db, err := sqlitedb.Open(context.Background(), path, nil)
	if err != nil {
		tb.Fatalf("open the copy %s: %v", path, err)
	}
	tb.Cleanup(func() { closeWithin(tb, ignoreError(db.Close)) })
	if got := queryInt(tb, db, `SELECT count(*) FROM pragma_integrity_check WHERE integrity_check != 'ok'`); got != 0 {
		tb.Fatal("the copy fails its integrity check")
	}
	return db
}

// dirNames lists the names in dir.
func dirNames(tb testing.TB, dir string) []string {
	tb.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// umask is the process's umask, read from the mode of a file created 0666.
func umask(tb testing.TB) fs.FileMode {
	tb.Helper()
	probe := filepath.Join(tb.TempDir(), "probe")
	f, err := os.OpenFile(probe, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
	if err != nil {
		tb.Fatal(err)
	}
	f.Close()
	fi, err := os.Stat(probe)
	if err != nil {
		tb.Fatal(err)
	}
	return 0o666 &^ fi.Mode().Perm()
}

// A backup of a database closed meanwhile stops at its next step with
// ErrClosed, and leaves nothing.
func TestBackupClosedMidway(t *testing.T) {
	db, _ := openDB(t, nil)
	createT(t, db)
	pad(t, db, 50)
	dir := t.TempDir()
	calls := 0
	err := db.Backup(context.Background(), filepath.Join(dir, "backup.db"), &sqlitedb.BackupOptions{PagesPerStep: 4, Progress: func(copied, total int) {
		if calls++; calls == 1 {
			if err := db.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		}
	}})
	if !errors.Is(err, sqlitedb.ErrClosed) {
		t.Fatalf("a backup of a database closed meanwhile: %v, want ErrClosed", err)
	}
	if calls != 1 {
		t.Errorf("%d steps ran, want 1", calls)
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("the directory holds %v after the backup failed, want nothing", names)
	}
}

// readCopyEnv makes the test binary the reader of
// TestBackupCopyOpensReadOnlyAnywhere: the copy's path.
const readCopyEnv = "SQLITEDB_READ_COPY"

// A copy opens read-only where its reader cannot write the folder (as a
// user without write access to it), and leaves nothing beside it: the
// copy is a rollback-journal file, which needs no -wal or -shm.
func TestBackupCopyOpensReadOnlyAnywhere(t *testing.T) {
	if path := os.Getenv(readCopyEnv); path != "" {
		db, err := sqlitedb.Open(context.Background(), "file:"+path+"?mode=ro", nil)
		if err == nil {
			var n int64
			err = db.Read(context.Background(), func(ctx context.Context, rx *sqlitedb.Rx) error {
				return rx.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n)
			})
			if cerr := db.Close(); err == nil {
				err = cerr
			}
			fmt.Println(n)
		}
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	db, _ := openDB(t, nil)
	createT(t, db)
	for i := range 50 {
		if err := db.Write(context.Background(), insert(i)); err != nil {
			t.Fatal(err)
		}
	}
	// A folder anyone may enter and no one but root may write.
	base, err := os.MkdirTemp("", "sqlitedb-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(base, "ro"), 0o755); os.RemoveAll(base) })
	ro := filepath.Join(base, "ro")
	copyPath := filepath.Join(ro, "copy.db")
	if err := db.Backup(context.Background(), copyPath, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{{base, 0o755}, {copyPath, 0o644}, {ro, 0o555}} {
		if err := os.Chmod(c.path, c.mode); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := readAsAnotherUser(t, base, copyPath); err != nil || out != "50" {
		t.Fatalf("the copy opened read-only by a reader who cannot write its folder: %v\n%s", err, out)
	}
	entries, err := os.ReadDir(ro)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("the folder holds %v after the read, want the copy alone", names)
	}
}

// readAsAnotherUser counts the rows of table t in the database at path,
// opened read-only (mode=ro) by the test binary run as another process:
// as nobody when the test runs as root (root may write any folder), else
// as this user. The binary is copied into base, a folder nobody may enter.
// It returns what the reader printed: the count, or its error.
func readAsAnotherUser(t *testing.T, base, path string) (string, error) {
	t.Helper()
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	reader := filepath.Join(base, "reader.test")
	if err := os.WriteFile(reader, self, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(reader)
	cmd := exec.Command(reader, "-test.run=^TestBackupCopyOpensReadOnlyAnywhere$")
	cmd.Env = append(os.Environ(), readCopyEnv+"="+path)
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// A database the package closed opens read-only where its reader cannot
// write the folder, leaving nothing new beside it: the last connection to
// close keeps the -wal (emptied) and the -shm, which SQLite needs to read
// a WAL-mode file read-only without creating them.
func TestReadOnlyOpenAfterCloseInAFolderItCannotWrite(t *testing.T) {
	base, err := os.MkdirTemp("", "sqlitedb-ro-")
	if err != nil {
		t.Fatal(err)
	}
	ro := filepath.Join(base, "ro")
	t.Cleanup(func() { os.Chmod(ro, 0o755); os.RemoveAll(base) })
	if err := os.Mkdir(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(ro, "closed.db")
	db, err := sqlitedb.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	createT(t, db)
	for i := range 50 {
		if err := db.Write(context.Background(), insert(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() != 0 {
		t.Fatalf("after Close the WAL is %v (%v); want it kept, empty", fi, err)
	}
	before := names(t, ro)
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{{base, 0o755}, {path, 0o644}, {path + "-wal", 0o644}, {path + "-shm", 0o644}, {ro, 0o555}} {
		if err := os.Chmod(c.path, c.mode); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := readAsAnotherUser(t, base, path); err != nil || out != "50" {
		t.Fatalf("the closed database opened read-only by a reader who cannot write its folder: %v\n%s", err, out)
	}
	if after := names(t, ro); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("the folder held %v, and %v after the read", before, after)
	}
}

// names lists the files in dir.
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ns []string
	for _, e := range entries {
		ns = append(ns, e.Name())
	}
	return ns
}
