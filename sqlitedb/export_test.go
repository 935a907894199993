package sqlitedb

import (
	"database/sql"
	"net/url"
	"time"
)

// OpenPoolForTest opens a plain database/sql pool of the package's
// connections on path, with the default pragmas, for tests of the row
// reader that need connections of their own.
func OpenPoolForTest(path string) *sql.DB {
	return sql.OpenDB(newConnector(dsn{path: path, params: url.Values{}}, 5*time.Second, 5*time.Second, DefaultPragmas(), 64, false))
}

var MappedFiles = mappedFiles
