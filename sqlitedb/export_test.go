package sqlitedb

import (
	"database/sql"
	"encoding/binary"
	"net/url"
	"os"
	"time"
)

// OpenPoolForTest opens a plain database/sql pool of the package's
// connections on path, with the default pragmas, for tests of the row
// reader that need connections of their own.
func OpenPoolForTest(path string) *sql.DB {
	return sql.OpenDB(newConnector(dsn{path: path, params: url.Values{}}, connectorConfig{busyTimeout: 5 * time.Second, openTimeout: 5 * time.Second,
		pragmas: DefaultPragmas(), stmtCache: 64}))
}

// RxForTest and TxForTest are handles on conn, a connection of
// OpenPoolForTest's pool, outside any transaction (each statement its
// own), for tests of the handles' queries on connections of their own.
func RxForTest(conn *sql.Conn) *Rx { return &Rx{conn: conn} }
func TxForTest(conn *sql.Conn) *Tx { return &Tx{Rx{conn: conn}} }

var MappedFiles = mappedFiles

// OptionsForTest are the options db was opened with, defaults filled in.
func OptionsForTest(db *DB) Options { return db.opts }

// ColumnsForTest is the number of columns in each of rows' rows.
func ColumnsForTest(rows *Rows) int { return rows.ncol }

// SetWALFinishFramesForTest sets the WAL's size, in frames, from which
// the DB's writer takes its finishing step after a background checkpoint
// (walFinishFrames, 40,000, otherwise).
func (db *DB) SetWALFinishFramesForTest(n int64) { db.checkpointer.finishFrames.Store(n) }

// Pragmas are the pragmas every connection runs, in order (the read
// connections add query_only).
func (db *DB) Pragmas() []Pragma { return append([]Pragma{}, db.pragmas...) }

// QueueTicketsForTest is how many tickets the process queue of the
// database at path has handed out (0 if it has none).
func QueueTicketsForTest(path string) int64 {
	b, err := os.ReadFile(path + queueSuffix)
	if err != nil || len(b) < queueNextAt+8 {
		return 0
	}
	return int64(binary.LittleEndian.Uint64(b[queueNextAt:])) - 1
}
