// Package sqlitedb runs one SQLite file under a concurrent Go server with
// no "database is locked" errors and a short tail latency, on
// github.com/mattn/go-sqlite3.
//
//	db, err := sqlitedb.Open(ctx, "data/app.db", nil)
//	err = db.Write(ctx, func(ctx context.Context, conn *sql.Conn) error {
//		_, err := conn.ExecContext(ctx, `UPDATE counters SET n = n + 1 WHERE id = 1`)
//		return err
//	})
//	err = db.Read(ctx, func(ctx context.Context, conn *sql.Conn) error {
//		return conn.QueryRowContext(ctx, `SELECT n FROM counters WHERE id = 1`).Scan(&n)
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
//     while every queued writer waits. The writer copies inline only the
//     few pages committed while a checkpoint ran, so the WAL starts over. If
//     readers never pause and the WAL reaches 20,000 pages anyway, the
//     writer runs one RESTART checkpoint, which waits up to 20 ms for the
//     readers of older snapshots. Once writes stop for 2 s the WAL is
//     truncated to zero bytes.
//   - Pages are copied from a memory map, not read with a system call. In
//     WAL mode a connection empties its page cache whenever another
//     connection has committed since its last read, so on a busy server
//     every read fetches its pages again, a pread each (about twenty for
//     a typical web page). Connections open the file through this
//     package's VFS, "sqlitedb": SQLite's default VFS with four methods
//     replaced (mapvfs.c), which maps the database file and its WAL once
//     per process, from the descriptor SQLite itself opened, never unmaps
//     them while they are open, and copies each page from the map. SQLite's
//     own map (PRAGMA mmap_size) does not help here: it unmaps the whole
//     file each time the cache is emptied, so every page faults again.
//     Writes, locks and everything else are SQLite's own code.
//     Options.SQLiteVFS turns it off.
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
//     underneath (elsewhere connections use SQLite's default), and that
//     nothing truncates the file outside SQLite's locking while this
//     process reads it (SQLite's own memory map assumes the same; a page
//     read past a truncation by another program raises SIGBUS).
//   - Every wait has a deadline (Options.Timeout, 5 s): for the writer's
//     turn, for SQLite's lock held by another process (polled every 1 ms,
//     without back-off), for a read connection. A write whose caller left
//     before its turn never runs. A ctx that ends while a statement runs
//     interrupts it (sqlite3_interrupt): Read, and a write in a
//     transaction of its own, return an error wrapping ctx.Err(), and the
//     connection stays usable. Writes sharing a transaction (group commit,
//     Coalesce) are not interrupted once they run, since an interrupted
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
// Stats returns the counters to watch (writer queue depth, turns, waits,
// abandoned writes, commits, busy retries and errors, checkpoints, reads that
// waited for a connection); package sqlitedbprom exports them to
// Prometheus. A Write or Coalesce called inside a write fails at once: it
// would wait for its own turn.
//
// Query, QueryRow and Exec are a faster way to run statements inside Read
// or Write, on the connection fn is given: each statement stays prepared on
// the connection, and Query steps through all the rows in one call into C,
// copying each column once, so Scan converts it without a driver.Value per
// column. For a 100-row listing Query took 44 µs where database/sql took
// 86 µs; a page of one post and its comments, 11 µs instead of 25 µs.
//
// The other Options exist to compare setups: WriterGroupCommit,
// WriterNone, SharedPool, Deferred, BusySQLite, SQLiteCheckpoints.
//
// # Measured
//
// BenchmarkCompare (compare_test.go) runs one load on four setups: N
// goroutines each writing in a loop (a transaction that reads an account's
// balance, writes it back plus one and inserts an entry) beside N reading
// an account's 20 latest entries, until 40,000 writes are done. On a
// 2-core virtual machine (Debian 12, Go 1.26, SQLite 3.54.1), medians of 3
// runs of go test -run '^$' -bench Compare -benchtime 40000x -count 3
// (the other three setups open the file with SQLite's default VFS):
//
//	16 writers, 16 readers   writes/s  reads/s  write p50/p99 ms  read p50/p99 ms  errors
//	this package               14,373   51,532     0.02 / 37.0      0.17 / 1.4          0
//	SetMaxOpenConns(1)         10,912   10,794     0.86 / 8.9       0.86 / 9.0          0
//	two pools, _txlock=imm.     8,110   33,983     0.41 / 36.2      0.23 / 3.4          0
//	one pool, deferred          9,962   23,241     0.57 / 4.9       0.41 / 3.8     21,546
//
//	64 writers, 64 readers
//	this package               11,782   59,009     0.02 / 73.3      0.74 / 5.0          0
//	SetMaxOpenConns(1)         11,156   11,306     3.6 / 26.9       3.6 / 26.7          0
//	two pools, _txlock=imm.     6,994   42,907     1.8 / 89.9       0.85 / 9.3         0
//	one pool, deferred          9,586   25,220     2.2 / 14.7       1.6 / 13.1     24,090
//
// With deferred transactions more than half the writes fail with "database is
// locked" (SQLITE_BUSY at once, whatever the busy timeout).
// SetMaxOpenConns(1) has no errors but serves reads only between writes:
// 5 times fewer reads than this package, at 5 to 6.5 times the read latency.
// This package keeps every write (no errors; the balances add up to the
// writes) at or above the single connection's write rate, with the most
// reads and the shortest read tail. Its weak point is the write tail, p99
// 37–73 ms where the single connection's is 9–27 ms, and it comes from the
// CPU, not the disk (BenchmarkWriteTail, measured before the VFS was
// added): with 16 writers and no readers the package did 37,000–40,000
// writes/s at p99 3.5–4 ms; beside 4 readers that loop without pause on the
// two cores, 10,500–12,700 writes/s at p99 41–52 ms. Without fsyncs
// (synchronous=OFF), or in a trial build without the writer's finishing
// checkpoints, the p99 stayed at 28–37 ms. The writer goroutine waits for a CPU behind readers
// that never block (Go has no goroutine priorities); the single connection
// does not, because its readers wait for the same connection
// (BenchmarkWriteTail). Servers whose requests wait on the network between
// statements see less of it: Lorem News, on this package, answers 20
// clients at p99 about 9 ms. The
// figures moved by up to 2× between runs: compare rows of one run.
//
// BenchmarkWritesBesideReads (16 writers beside 8 readers, medians of 3)
// prices the checkpointer against SQLite's checkpoints inside the commit:
// 88.8 against 111.4 µs per write, write p99 40.9 against 51.9 ms, p99.9
// 73.0 against 100.7 ms, slowest 110 against 150 ms.
//
// # Limits
//
//   - Arrival order holds within one process. A second process writing the
//     same file works — its BEGIN IMMEDIATE waits for the lock, polling,
//     up to Timeout — but the two processes' writers are not ordered
//     between them, and a process that holds the lock longer than Timeout
//     makes the other's writes fail with ErrBusy.
//   - One write at a time: a slow write function delays every write behind
//     it. Keep work that is not SQL (hashing, HTTP calls) outside Write.
//   - A function given to Read or Write must not keep its *sql.Conn, nor
//     begin or end transactions on it (savepoints are fine); read
//     connections are query_only.
//   - No in-memory databases: each pooled connection would get its own.
//   - The pages read through the map count in the process's RSS. They are
//     the kernel's page cache, resident whether mapped or not, and
//     reclaimable; RssAnon in /proc/PID/status is the process's own
//     memory. Each mapped file reserves 64 GiB of address space (not
//     memory); beyond that, and on systems other than unix, pages are read
//     with pread.
//   - A read of the map past the end of the file kills the process with
//     SIGBUS, so the map serves only bytes below the size this process
//     last saw, lowered before each truncation it makes. SQLite's locks
//     keep every truncation SQLite makes, from any process, away from
//     bytes a reader still needs. A program that truncates the file
//     outside SQLite (copying another file over a live database, which
//     corrupts it anyway) can crash the process, as with SQLite's own
//     memory map.
//   - It uses the SQLite that go-sqlite3 compiles in: the functions it calls
//     are the driver's, built with the program's CGO_CFLAGS, so
//     compile-time options are set in one place and there is one SQLite in
//     the binary. cgo is required.
package sqlitedb
