//go:build cgo && unix

package sqlitedb

// #include "capi.h"
import "C"

import "sync"

// mapVFSName is the name mapvfs.c registers its VFS under: SQLite's
// default VFS reading the database file and its WAL from one memory map of
// each per process.
const mapVFSName = "sqlitedb"

// mapVFS registers the VFS the first time it is called and answers its
// name, or "" where it cannot work (a 32-bit address space, a default VFS
// that is not SQLite's unix VFS): connections then use SQLite's default.
var mapVFS = sync.OnceValue(func() string {
	if C.lite_map_register() != C.LITE_OK {
		return ""
	}
	return mapVFSName
})

// mappedFiles is how many files the process has mapped now.
func mappedFiles() int { return int(C.lite_map_count()) }
