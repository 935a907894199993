//go:build cgo && !unix

package sqlitedb

// mapVFS answers "" where there is no mmap: connections use SQLite's
// default VFS.
func mapVFS() string { return "" }

func mappedFiles() int { return 0 }
