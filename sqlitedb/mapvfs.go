//go:build unix

package sqlitedb

// #include "capi.h"
import "C"

import "fmt"

// mapVFS is the name mapvfs.c registers its VFS under: SQLite's default VFS
// reading the database file and its WAL from one memory map of each per
// process. On systems without mmap (not unix) connections use SQLite's
// default VFS.
const mapVFS = "sqlitedb"

// registerMapVFS registers mapVFS; installOnce calls it.
func registerMapVFS() error {
	if rc := C.lite_map_register(); rc != C.LITE_OK {
		return fmt.Errorf("sqlitedb: register the %s VFS: SQLite error %d", mapVFS, int(rc))
	}
	return nil
}

// mappedFiles is how many files the process has mapped now.
func mappedFiles() int { return int(C.lite_map_count()) }

// walWrites is how many writes the process has made to WAL files through
// mapVFS.
func walWrites() int64 { return int64(C.lite_wal_writes()) }
