//go:build cgo && unix

package sqlitedb

// #include "capi.h"
import "C"

import (
	"sync"
	"syscall"
)

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

// isMapped reports whether the file at path is mapped by the package's
// VFS in this process now.
func isMapped(path string) bool {
	var st syscall.Stat_t
	if syscall.Stat(path, &st) != nil {
		return false
	}
	return C.lite_map_has(C.ulonglong(st.Dev), C.ulonglong(st.Ino)) != 0
}
