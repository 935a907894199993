//go:build unix

// The "faultvfs" VFS: another VFS (the base: "sqlitedb", or SQLite's own
// "unix") with a layer on top that counts the reads, writes, syncs,
// truncations and size queries SQLite makes on database files and WAL
// files, and fails the Nth of one kind, or every one from the Nth on, as a
// disk would: SQLITE_IOERR_READ, _WRITE, _FSYNC, _TRUNCATE, _FSTAT, or
// SQLITE_FULL for a write to a full disk. A failed call never reaches the
// base VFS, so the file is left as it was.
//
// The file object is this layer's method pointer (and whether the file is
// counted), then the base VFS's own file object, which every method is
// handed on to unchanged.
#include <pthread.h>
#include <string.h>

#include "faultvfs.h"

#define INNER_OFFSET 16

typedef struct fault_file {
	const sqlite3_io_methods *pMethods;
	int counted; // a database file or a WAL
} fault_file;

static sqlite3_file *inner(sqlite3_file *f) { return (sqlite3_file *)((char *)f + INNER_OFFSET); }

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static sqlite3_vfs fault_vfs;
static sqlite3_vfs *base_vfs; // under mu; read by fault_open, which runs only while registered
static int registered;        // under mu
static int open_files;        // atomic

// The fault armed, and the calls counted since it was (all atomic).
static long long counts[NCALLS];
static long long injected;
static int armed;
static int arm_kind;
static long long arm_n;
static int arm_persistent;

static int call_of(int kind) {
	switch (kind) {
	case FAULT_KIND_READ:
		return CALL_READ;
	case FAULT_KIND_WRITE:
	case FAULT_KIND_FULL:
		return CALL_WRITE;
	case FAULT_KIND_SYNC:
		return CALL_SYNC;
	case FAULT_KIND_TRUNCATE:
		return CALL_TRUNCATE;
	default:
		return CALL_FILESIZE;
	}
}

static int code_of(int kind) {
	switch (kind) {
	case FAULT_KIND_READ:
		return FAULT_IOERR_READ;
	case FAULT_KIND_WRITE:
		return FAULT_IOERR_WRITE;
	case FAULT_KIND_FULL:
		return FAULT_FULL;
	case FAULT_KIND_SYNC:
		return FAULT_IOERR_FSYNC;
	case FAULT_KIND_TRUNCATE:
		return FAULT_IOERR_TRUNCATE;
	default:
		return FAULT_IOERR_FSTAT;
	}
}

// fault counts a call of the given kind on a counted file and answers the
// error it must fail with, or FAULT_OK to hand it on.
static int fault(sqlite3_file *f, int call) {
	if (!((fault_file *)f)->counted) return FAULT_OK;
	long long n = __atomic_add_fetch(&counts[call], 1, __ATOMIC_ACQ_REL);
	if (!__atomic_load_n(&armed, __ATOMIC_ACQUIRE)) return FAULT_OK;
	int kind = __atomic_load_n(&arm_kind, __ATOMIC_ACQUIRE);
	long long at = __atomic_load_n(&arm_n, __ATOMIC_ACQUIRE);
	if (call_of(kind) != call) return FAULT_OK;
	if (n == at || (n > at && __atomic_load_n(&arm_persistent, __ATOMIC_ACQUIRE))) {
		__atomic_add_fetch(&injected, 1, __ATOMIC_ACQ_REL);
		return code_of(kind);
	}
	return FAULT_OK;
}

static int f_close(sqlite3_file *f) {
	int rc = inner(f)->pMethods->xClose(inner(f));
	__atomic_sub_fetch(&open_files, 1, __ATOMIC_ACQ_REL);
	return rc;
}

static int f_read(sqlite3_file *f, void *buf, int amt, sqlite3_int64 off) {
	int rc = fault(f, CALL_READ);
	return rc ? rc : inner(f)->pMethods->xRead(inner(f), buf, amt, off);
}

static int f_write(sqlite3_file *f, const void *buf, int amt, sqlite3_int64 off) {
	int rc = fault(f, CALL_WRITE);
	return rc ? rc : inner(f)->pMethods->xWrite(inner(f), buf, amt, off);
}

static int f_truncate(sqlite3_file *f, sqlite3_int64 size) {
	int rc = fault(f, CALL_TRUNCATE);
	return rc ? rc : inner(f)->pMethods->xTruncate(inner(f), size);
}

static int f_sync(sqlite3_file *f, int flags) {
	int rc = fault(f, CALL_SYNC);
	return rc ? rc : inner(f)->pMethods->xSync(inner(f), flags);
}

static int f_file_size(sqlite3_file *f, sqlite3_int64 *size) {
	int rc = fault(f, CALL_FILESIZE);
	return rc ? rc : inner(f)->pMethods->xFileSize(inner(f), size);
}

// The rest are handed on as they are.
static int f_lock(sqlite3_file *f, int l) { return inner(f)->pMethods->xLock(inner(f), l); }
static int f_unlock(sqlite3_file *f, int l) { return inner(f)->pMethods->xUnlock(inner(f), l); }
static int f_check_reserved_lock(sqlite3_file *f, int *out) { return inner(f)->pMethods->xCheckReservedLock(inner(f), out); }
static int f_file_control(sqlite3_file *f, int op, void *arg) { return inner(f)->pMethods->xFileControl(inner(f), op, arg); }
static int f_sector_size(sqlite3_file *f) { return inner(f)->pMethods->xSectorSize(inner(f)); }
static int f_device_characteristics(sqlite3_file *f) { return inner(f)->pMethods->xDeviceCharacteristics(inner(f)); }
static int f_shm_map(sqlite3_file *f, int pg, int pgsz, int extend, void volatile **pp) {
	return inner(f)->pMethods->xShmMap(inner(f), pg, pgsz, extend, pp);
}
static int f_shm_lock(sqlite3_file *f, int off, int n, int flags) { return inner(f)->pMethods->xShmLock(inner(f), off, n, flags); }
static void f_shm_barrier(sqlite3_file *f) { inner(f)->pMethods->xShmBarrier(inner(f)); }
static int f_shm_unmap(sqlite3_file *f, int del) { return inner(f)->pMethods->xShmUnmap(inner(f), del); }
static int f_fetch(sqlite3_file *f, sqlite3_int64 off, int amt, void **pp) { return inner(f)->pMethods->xFetch(inner(f), off, amt, pp); }
static int f_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p) { return inner(f)->pMethods->xUnfetch(inner(f), off, p); }

// One method table of this layer per method table of the base VFS (a
// database file and a WAL may have different ones), with the same
// version and the same methods missing. Under mu.
#define NTABLES 16
static struct {
	const sqlite3_io_methods *base;
	sqlite3_io_methods ours;
} tables[NTABLES];

#define WRAP(field, fn) m->field = b->field ? fn : 0

static const sqlite3_io_methods *methods_for(const sqlite3_io_methods *b) {
	const sqlite3_io_methods *out = 0;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < NTABLES && !out; i++) {
		if (!tables[i].base) {
			sqlite3_io_methods *m = &tables[i].ours;
			memset(m, 0, sizeof(*m));
			m->iVersion = b->iVersion;
			WRAP(xClose, f_close);
			WRAP(xRead, f_read);
			WRAP(xWrite, f_write);
			WRAP(xTruncate, f_truncate);
			WRAP(xSync, f_sync);
			WRAP(xFileSize, f_file_size);
			WRAP(xLock, f_lock);
			WRAP(xUnlock, f_unlock);
			WRAP(xCheckReservedLock, f_check_reserved_lock);
			WRAP(xFileControl, f_file_control);
			WRAP(xSectorSize, f_sector_size);
			WRAP(xDeviceCharacteristics, f_device_characteristics);
			if (b->iVersion >= 2) {
				WRAP(xShmMap, f_shm_map);
				WRAP(xShmLock, f_shm_lock);
				WRAP(xShmBarrier, f_shm_barrier);
				WRAP(xShmUnmap, f_shm_unmap);
			}
			if (b->iVersion >= 3) {
				WRAP(xFetch, f_fetch);
				WRAP(xUnfetch, f_unfetch);
			}
			tables[i].base = b;
		}
		if (tables[i].base == b) out = &tables[i].ours;
	}
	pthread_mutex_unlock(&mu);
	return out;
}

static int fault_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out) {
	fault_file *p = (fault_file *)f;
	sqlite3_vfs *b = base_vfs;
	p->pMethods = 0;
	p->counted = (flags & (FAULT_OPEN_MAIN_DB | FAULT_OPEN_WAL)) != 0;
	inner(f)->pMethods = 0;
	int rc = b->xOpen(b, name, inner(f), flags, out);
	if (inner(f)->pMethods) {
		const sqlite3_io_methods *m = methods_for(inner(f)->pMethods);
		if (!m) { // more method tables than this layer keeps: refuse the file
			inner(f)->pMethods->xClose(inner(f));
			return FAULT_ERROR;
		}
		p->pMethods = m;
		__atomic_add_fetch(&open_files, 1, __ATOMIC_ACQ_REL);
	}
	return rc;
}

// fault_register registers "faultvfs" over the VFS named base. Called
// again with another base, it moves the layer over that one, if no file
// is open through it (SQLITE_MISUSE otherwise); SQLITE_ERROR if there is
// no VFS named base.
int fault_register(const char *base) {
	int rc = FAULT_OK;
	pthread_mutex_lock(&mu);
	sqlite3_vfs *b = sqlite3_vfs_find(base);
	if (!b) {
		rc = FAULT_ERROR;
	} else if (b == &fault_vfs) {
		rc = FAULT_MISUSE;
	} else if (!registered || b != base_vfs) {
		if (registered && __atomic_load_n(&open_files, __ATOMIC_ACQUIRE) > 0) {
			rc = FAULT_MISUSE;
		} else {
			if (registered) sqlite3_vfs_unregister(&fault_vfs);
			fault_vfs = *b;
			fault_vfs.szOsFile = INNER_OFFSET + b->szOsFile;
			fault_vfs.pNext = 0;
			fault_vfs.zName = "faultvfs";
			fault_vfs.xOpen = fault_open;
			base_vfs = b;
			rc = sqlite3_vfs_register(&fault_vfs, 0);
			registered = rc == FAULT_OK;
		}
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

// fault_arm makes the nth call (from 1) of the kind's method, counted from
// now, fail; with persistent, every call from the nth on. It sets every
// count back to 0.
void fault_arm(int kind, long long n, int persistent) {
	__atomic_store_n(&armed, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&arm_kind, kind, __ATOMIC_RELEASE);
	__atomic_store_n(&arm_n, n, __ATOMIC_RELEASE);
	__atomic_store_n(&arm_persistent, persistent, __ATOMIC_RELEASE);
	fault_reset();
	__atomic_store_n(&armed, 1, __ATOMIC_RELEASE);
}

void fault_disarm(void) { __atomic_store_n(&armed, 0, __ATOMIC_RELEASE); }

// fault_reset sets the counts back to 0; it leaves a fault armed.
void fault_reset(void) {
	for (int i = 0; i < NCALLS; i++) __atomic_store_n(&counts[i], 0, __ATOMIC_RELEASE);
	__atomic_store_n(&injected, 0, __ATOMIC_RELEASE);
}

long long fault_count(int call) { return call >= 0 && call < NCALLS ? __atomic_load_n(&counts[call], __ATOMIC_ACQUIRE) : 0; }
long long fault_injected(void) { return __atomic_load_n(&injected, __ATOMIC_ACQUIRE); }
int fault_open_files(void) { return __atomic_load_n(&open_files, __ATOMIC_ACQUIRE); }
