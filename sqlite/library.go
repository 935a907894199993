package sqlite

import (
	"database/sql"
	"fmt"

	"github.com/loremnews/loremnews/sqlitedb"
)

// LibraryInfo reports the linked SQLite's version and the options it was
// compiled with (PRAGMA compile_options), to confirm a build's CGO_CFLAGS.
func LibraryInfo() (version string, options []string, err error) {
	db := sql.OpenDB(sqlitedb.NewConnector("file::memory:", nil))
	defer db.Close()
	if err := db.QueryRow(`SELECT sqlite_version()`).Scan(&version); err != nil {
		return "", nil, fmt.Errorf("sqlite version: %w", err)
	}
	rows, err := db.Query(`PRAGMA compile_options`)
	if err != nil {
		return "", nil, fmt.Errorf("compile options: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			return "", nil, err
		}
		options = append(options, o)
	}
	return version, options, rows.Err()
}
