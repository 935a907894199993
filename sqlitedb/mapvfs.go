package sqlitedb

// #include "capi.h"
import "C"

// mapVFS is the name mapvfs.c registers its VFS under: SQLite's default VFS
// reading the database file and its WAL from one memory map of each per
// process.
const mapVFS = "sqlitedb"

// mappedFiles is how many files the process has mapped now.
func mappedFiles() int { return int(C.lite_map_count()) }
