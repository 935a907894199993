// Package faultvfs is a SQLite VFS for tests that fails the reads, writes,
// syncs and truncations of a database as a failing disk would: the Nth call
// of one kind, or every call from the Nth on. It wraps another VFS by name
// ("sqlitedb", the package's VFS, or SQLite's own "unix"), handing every
// call on to it unchanged except the one it fails, which never reaches it.
//
// Only the database file and its WAL are counted and failed; the -shm is
// not read or written through these calls anyway. Counts are global to the
// process, so tests that arm a fault must not run beside each other.
//
// Open a database through it with the DSN parameter vfs=faultvfs, after
// Register. Unix only, like the package's VFS.
package faultvfs
