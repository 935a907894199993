//go:build !unix

package sqlitedb

// mapVFS is empty where there is no mmap: connections use SQLite's default
// VFS.
const mapVFS = ""

func registerMapVFS() error { return nil }

func mappedFiles() int { return 0 }

func walWrites() int64 { return 0 }
