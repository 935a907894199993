//go:build cgo && !unix

package sqlitedb

// mapVFS answers "" where there is no mmap: connections use SQLite's
// default VFS.
func mapVFS() string { return "" }

func mappedFiles() int { return 0 }

func isMapped(string) bool { return false }

// mapVFSName is the name the VFS would have.
const mapVFSName = "sqlitedb"
