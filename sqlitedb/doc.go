// Package sqlitedb runs one SQLite file under a concurrent Go server with
// no "database is locked" errors and a short tail latency, on
// github.com/mattn/go-sqlite3.
//
//	db, err := sqlitedb.Open(ctx, "data/app.db", nil)
//	err = db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
//		_, err := tx.Exec(ctx, `UPDATE counters SET n = n + 1 WHERE id = 1`)
//		return err
//	})
//	err = db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
//		return rx.QueryRow(ctx, `SELECT n FROM counters WHERE id = 1`).Scan(&n)
//	})
//
// # The problem
//
// SQLite allows one writer at a time. With database/sql's defaults a
// server meets that limit in three ways:
//
//   - A transaction begins DEFERRED: it reads, then tries to write. If
//     another connection committed since its read, SQLite cannot upgrade
//     its lock and answers SQLITE_BUSY at once; no busy timeout helps.
//   - Writers that wait for the lock wait in SQLite's busy handler, which
//     backs off (1, 2, 5, … 100 ms between tries): the writer that has
//     waited longest polls least often and loses to newcomers, so the tail
//     grows to the timeout, and past it the request fails.
//   - The usual advice, db.SetMaxOpenConns(1), removes the errors by
//     putting every read behind every write. Two pools (one write
//     connection, several read ones) keep reads apart, but database/sql
//     hands a freed connection to a random waiter, so under load an
//     unlucky writer waits many turns.
//
// # What this package does
//
// Open gives a read pool of query_only connections beside exactly one
// write connection, with the pragmas of DefaultPragmas (WAL,
// synchronous=NORMAL, foreign keys on, a larger page cache, no memory map
// of SQLite's own, temporary tables in memory), each replaceable in Options
// or in the DSN.
//
//   - Write runs its function inside BEGIN IMMEDIATE … COMMIT, so the
//     write lock is taken before the first read and the upgrade failure
//     cannot happen. All writes of the process run on one goroutine in
//     arrival order: the turn never passes to a goroutine that is not yet
//     running, and no writer is overtaken. Write returns after COMMIT.
//   - Coalesce is a write that cannot fail on its own (a last-seen time, a
//     counter): those queued at one moment share one transaction, so a
//     stream of them costs one commit per turn instead of one each.
//   - Read runs its function in one read transaction on a read connection:
//     one snapshot for all its queries, and in WAL mode no write waits for
//     it. Reads take connections in arrival order too.
//   - Checkpoints run from a goroutine with a connection of its own
//     (PASSIVE), not inside the commit that takes the WAL past 1,000 pages
//     while every queued writer waits. Each copies in passes until only a
//     few pages are left, and flushes what it wrote as it goes. Once the
//     WAL holds 40,000 pages, the writer copies inline the few pages
//     committed since the last one, so the WAL starts over: that step
//     fsyncs both files while writes wait, so it comes once per ~157 MiB
//     of WAL, not after every checkpoint. If readers never pause and the
//     WAL reaches 60,000 pages anyway, the writer runs one RESTART checkpoint,
//     which waits up to 20 ms for the readers of older snapshots. Once
//     writes stop for 2 s the WAL is truncated to zero bytes. Each DB
//     (each process) on a file has its checkpointer; before it copies, it
//     reads in the WAL index how far checkpoints of any process have
//     copied the WAL, or are copying it, and copies nothing if that is
//     within 1,000 pages of the end: n processes copy the WAL and flush
//     the database file as often as one does, not n times as often.
//   - Reads are SQLite's own: a pread per page. Options.MemoryMap copies
//     pages from a memory map instead: in WAL mode a connection empties its
//     page cache whenever another connection has committed since its last
//     read, so on a busy server every read fetches its pages again (about
//     twenty for a typical web page). With it, connections open the file
//     through this package's VFS, "sqlitedb": SQLite's default VFS with
//     four methods replaced (mapvfs.c), which maps the database file and
//     its WAL once per process, from the descriptor SQLite itself opened,
//     never unmaps them while they are open, and copies each page from the
//     map. SQLite's own map (PRAGMA mmap_size) does not help here: it
//     unmaps the whole file each time the cache is emptied, so every page
//     faults again. A read the kernel cannot serve through the map (EIO,
//     a file cut short outside SQLite) raises SIGBUS, which would end a Go
//     program; every copy from the map is guarded, and the fault turns
//     into a pread of those bytes, so the statement gets the error it
//     gets without the map. It is not the default because what it saves
//     is small next to a request's other work, and it installs a SIGBUS
//     handler in the process (which passes every other SIGBUS to Go's).
//     Stats().MappedDatabase and MappedWAL say which files are mapped.
//   - Other processes may open the file at any time, as with SQLite
//     itself: the sqlite3 shell, a script, a backup or replication tool
//     such as Litestream, a second process of yours during a deploy. They
//     read, write, checkpoint and VACUUM beside it, and nothing is lost:
//     the VFS never opens or closes a descriptor of the file (closing one
//     would drop the process's POSIX locks, which are what keep another
//     process from deleting the WAL under this one), and every write is
//     SQLite's own, reported by the call that made it. The tests prove it
//     with those processes beside a loaded DB, with I/O errors injected
//     at every write, sync and read of a transaction, with a full disk,
//     with processes killed mid-write, and against SQLite's own VFS.
//     What the map assumes: a 64-bit address space and SQLite's unix VFS
//     underneath (elsewhere connections use SQLite's default, and Open
//     logs a line), a disk that does not fail reads, and that nothing
//     truncates the file outside SQLite's locking while this process
//     reads it (SQLite's own memory map assumes the same).
//   - A write is committed wholly or not at all, and its caller is told
//     which. SQLite rolls a transaction back on its own after some errors
//     (an interrupted write statement, a full disk, an I/O error); the
//     handle then refuses every further statement (ErrRolledBack), and the
//     write connection lets no commit through but the writer's own, so
//     nothing of the write runs, and commits, outside its transaction.
//     In a shared transaction (Coalesce) the write that
//     failed is told so, and the others run again without it. A COMMIT
//     that fails with an I/O error may leave its frames complete in the
//     WAL, where recovery after a crash would find them: they are voided
//     by an empty transaction, synced, which waits for SQLite's lock like
//     a write; until it has run, no write commits.
//   - A failed sync of the database file stops every checkpoint of the DB
//     (ErrSyncFailed): Linux reports a lost write-back once, then reports
//     success, and a checkpoint that completed after it would let the WAL
//     start over above pages that never reached the disk. The WAL keeps
//     every frame, reads and writes go on, Stats, the log and Close say
//     so, and opening the database again (restart the process) copies the
//     whole WAL again.
//   - A read I/O error fails the statement that met it, with the system
//     call's error in *Error's Errno (SQLite reports a read's EIO as
//     "database disk image is malformed"); the process lives, through
//     Options.MemoryMap too.
//   - Every wait has a deadline (Options.Timeout, 5 s): for the writer's
//     turn, for the turn among processes, for SQLite's lock held by a
//     program outside the package (polled every 1 ms, without back-off),
//     for a read connection. A write whose caller left
//     before its turn never runs. A ctx that ends while a statement runs
//     interrupts it (sqlite3_interrupt): Read, and a write in a
//     transaction of its own, return an error wrapping ctx.Err(), and the
//     connection stays usable. Writes sharing a transaction (Coalesce)
//     are not interrupted once they run, since an interrupted
//     write statement rolls back the whole transaction.
//   - A panic in fn reaches the goroutine that called Read, Write or
//     Coalesce (a write's as a *PanicError), after its transaction rolled
//     back; the writer goes on with the next write.
//   - Open reads back the pragmas it sets whose value SQLite reports, and
//     fails naming the one that did not take (SQLite ignores a value it
//     does not know: journal_mode=WALL would leave the rollback journal).
//   - Errors say what happened: ErrBusy (the lock stayed taken), ErrTimeout
//     (the turn did not come), ErrClosed. A server answers 503 to all
//     three; SQLite's own error stays wrapped inside.
//   - Close lets queued writes finish, runs PRAGMA optimize and truncates
//     the WAL, so the file is complete on its own.
//
// Stats returns the counters to watch (writer queue depth, writes, waits,
// abandoned writes, commits, busy retries and errors, timeouts,
// checkpoints, reads that waited for a connection); package sqlitedbprom
// exports them to
// Prometheus. A Write or Coalesce called inside a write's function fails
// at once, given the function's ctx or the outer write's own (a request's
// ctx, or context.WithValue of it): it would wait for its own turn. One
// given another ctx (with a deadline of its own, or context.Background),
// or called from another goroutine that the function waits for, cannot
// be told from any other write: it waits until Timeout.
//
// # Handles
//
// The function a read runs gets an *Rx, a write's a *Tx, and its
// statements run on it: Query, QueryRow, and in a write Exec. They honour
// their ctx, return SQLite's errors as *Error, and refuse a statement that
// would begin or end the transaction (savepoints are fine), which belongs
// to Read and Write. Each statement stays prepared on the connection, and
// Query copies all its rows out of SQLite in one call into C, each column
// once, so Scan converts it without a driver.Value per column. A handle is
// valid only while its function runs. For what the handles lack
// (database/sql's Scan into other types, rows that stream), Rx.Conn is the
// escape hatch to the *sql.Conn underneath, inside the same transaction.
//
// Migrate applies ordered SQL files from an fs.FS as Options.Setup, each in
// a transaction of its own, recorded in MigrationsTable.
//
// Backup writes a consistent copy of the database to a new file while
// reads and writes go on, with SQLite's online backup API: one read
// transaction for the whole copy, so it is the snapshot of the moment it
// began and, in WAL mode, no writer waits for it. BackupOptions pace it
// (pages per step, a pause between steps, so a large copy leaves the disk
// to the site) and report its progress. The copy appears at its path only
// once complete and synced, no more readable than the database file. It
// is a rollback-journal file, not a WAL one: the copy opens read-only
// where its reader cannot write the folder, leaving nothing beside it
// (Open read-write puts it in WAL mode again).
//
// A DSN with mode=ro opens the database read-only: the read pool alone,
// and Write returns ErrReadOnly. SQLite reads a WAL-mode file read-only
// only with its -wal and -shm beside it (or in a folder it may create
// them in); the last of the package's connections to close a database
// keeps both, so a reader opens a closed database read-only in a folder it
// cannot write. It needs to read the file, its -wal and its -shm.
//
// Options.ConnectHook runs on every connection the package opens: the
// place to register SQL functions, collations and virtual tables, which
// SQLite keeps per connection.
//
// # Costs
//
// Against the usual recipes on database/sql (one connection; a read pool
// beside a write pool of one; one pool with deferred transactions), with N
// goroutines writing beside N reading: no write fails, writes keep at or
// above the single connection's rate, and reads run beside them at several
// times its rate. The cost is the write tail: the writer goroutine waits for
// a CPU behind readers that never block, so its p99 is longer than the
// single connection's. The measurements, with the benchmark that makes
// them, are in the repository's docs/use-it-in-your-own-program.md.
//
// # Limits
//
//   - Arrival order holds across the processes that use the package on
//     one file, on Linux (see Open: a ticket queue in a file beside the
//     database; a process killed with the turn holds the others up a few
//     milliseconds). A program outside the package (the sqlite3 shell, a
//     script) is not in the queue: a writer waiting for its lock polls, up
//     to Timeout, and one that holds the lock longer than Timeout makes
//     the package's writes fail with ErrBusy. So does a process of the
//     package stopped (SIGSTOP, a debugger) with the turn: the others wait
//     up to Timeout, then fail with ErrTimeout. Elsewhere than Linux, or
//     with _writers=poll, the processes' writers poll for SQLite's lock,
//     in no order between them.
//   - One write at a time: a slow write function delays every write behind
//     it. Keep work that is not SQL (hashing, HTTP calls) outside Write.
//   - A function given to Read or Write must not keep its *sql.Conn, nor
//     begin or end transactions on it (savepoints are fine); read
//     connections are query_only.
//   - No in-memory databases: each pooled connection would get its own.
//   - With Options.MemoryMap, the pages read through the map count in the
//     process's RSS. They are the kernel's page cache, resident whether
//     mapped or not, and reclaimable; RssAnon in /proc/PID/status is the
//     process's own memory. Each mapped file reserves 64 GiB of address space (not
//     memory); beyond that, and on systems other than unix, pages are read
//     with pread.
//   - With Options.MemoryMap, the process's SIGBUS handler is the
//     package's (it passes every SIGBUS that is not a guarded copy's to
//     the one before it): a program that sets its own SIGBUS handler after
//     the first such open takes the guard away, and a read error through
//     the map then ends the process, as with SQLite's own memory map.
//   - After ErrSyncFailed, reads find every page written since the last
//     good sync in the WAL, not in the file (the WAL index's count of
//     copied frames is set back to zero, in every process). A read
//     transaction that had begun before the failed sync still looks only
//     past the old count, and may find a page the disk lost. Restart
//     promptly: the next open copies the whole WAL again.
//   - It uses the SQLite that go-sqlite3 compiles in: the functions it calls
//     are the driver's, built with the program's CGO_CFLAGS, so
//     compile-time options are set in one place and there is one SQLite in
//     the binary. cgo is required.
package sqlitedb
