//go:build unix

package faultvfs

// #include <stdlib.h>
// #include "faultvfs.h"
import "C"

import (
	"fmt"
	"unsafe"

	// The SQLite whose VFS functions the layer calls, compiled into the
	// binary by the driver.
	_ "github.com/mattn/go-sqlite3"
)

// Name is the name the VFS is registered under, for the DSN's vfs=.
const Name = "faultvfs"

// Kind is which calls a fault fails, and with what.
type Kind int

const (
	Read     Kind = iota // xRead fails with SQLITE_IOERR_READ
	Write                // xWrite fails with SQLITE_IOERR_WRITE
	Sync                 // xSync fails with SQLITE_IOERR_FSYNC
	Truncate             // xTruncate fails with SQLITE_IOERR_TRUNCATE
	FileSize             // xFileSize fails with SQLITE_IOERR_FSTAT
	Full                 // xWrite fails with SQLITE_FULL, as on a full disk
)

func (k Kind) String() string {
	switch k {
	case Read:
		return "read"
	case Write:
		return "write"
	case Sync:
		return "sync"
	case Truncate:
		return "truncate"
	case FileSize:
		return "filesize"
	case Full:
		return "full"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Code is SQLite's extended result code a fault of kind k answers.
func (k Kind) Code() int {
	switch k {
	case Read:
		return C.FAULT_IOERR_READ
	case Write:
		return C.FAULT_IOERR_WRITE
	case Sync:
		return C.FAULT_IOERR_FSYNC
	case Truncate:
		return C.FAULT_IOERR_TRUNCATE
	case FileSize:
		return C.FAULT_IOERR_FSTAT
	case Full:
		return C.FAULT_FULL
	}
	return 0
}

// Register registers the VFS "faultvfs" over the VFS named base, which
// must be registered already. Called again with the same base, it does
// nothing; with another, it moves the layer over that one, which it
// refuses while a file is open through it.
func Register(base string) error {
	cs := C.CString(base)
	defer C.free(unsafe.Pointer(cs))
	switch rc := C.fault_register(cs); rc {
	case C.FAULT_OK:
		return nil
	case C.FAULT_ERROR:
		return fmt.Errorf("faultvfs: no VFS named %q", base)
	case C.FAULT_MISUSE:
		return fmt.Errorf("faultvfs: cannot wrap %q: files are open through the VFS, or it is the fault VFS itself", base)
	default:
		return fmt.Errorf("faultvfs: registering over %q: SQLite error %d", base, int(rc))
	}
}

// Arm sets every count back to 0 and makes the nth call (from 1) of the
// method kind fails fail, counted from now; with persistent, every call
// from the nth on, until Disarm or the next Arm.
func Arm(kind Kind, n int, persistent bool) {
	p := C.int(0)
	if persistent {
		p = 1
	}
	C.fault_arm(C.int(kind), C.longlong(n), p)
}

// Disarm stops failing calls; the counts go on.
func Disarm() { C.fault_disarm() }

// Reset sets every count back to 0, leaving any fault armed.
func Reset() { C.fault_reset() }

// Calls are the calls counted on database and WAL files since the last
// Arm or Reset, and how many of them were failed.
type Calls struct {
	Read, Write, Sync, Truncate, FileSize int64
	Injected                              int64
}

// Of is the count of the method a fault of kind k fails (Full: writes).
func (c Calls) Of(k Kind) int64 {
	switch k {
	case Read:
		return c.Read
	case Write, Full:
		return c.Write
	case Sync:
		return c.Sync
	case Truncate:
		return c.Truncate
	case FileSize:
		return c.FileSize
	}
	return 0
}

// Counts answers the calls counted since the last Arm or Reset.
func Counts() Calls {
	return Calls{
		Read:     int64(C.fault_count(C.CALL_READ)),
		Write:    int64(C.fault_count(C.CALL_WRITE)),
		Sync:     int64(C.fault_count(C.CALL_SYNC)),
		Truncate: int64(C.fault_count(C.CALL_TRUNCATE)),
		FileSize: int64(C.fault_count(C.CALL_FILESIZE)),
		Injected: int64(C.fault_injected()),
	}
}

// OpenFiles is how many files are open through the VFS now.
func OpenFiles() int { return int(C.fault_open_files()) }
