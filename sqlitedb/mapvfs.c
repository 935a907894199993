//go:build cgo && unix

// The "sqlitedb" VFS: SQLite's default VFS ("unix"), except that the
// database file and its WAL are each memory-mapped once per process, and a
// read of either copies from that map instead of calling pread.
//
// Why: in WAL mode, a connection whose read transaction starts after
// another connection committed empties its page cache, so it reads every
// page it needs again, one pread each. On a server where nearly every
// request commits, that is every read: about twenty system calls for a
// page of a typical web application. From the map, each is a copy of
// 4 KiB, and no system call. SQLite's own memory map (PRAGMA mmap_size)
// does not help here: it unmaps the whole file whenever the page cache is
// emptied, and every page faults again. This map is never unmapped while
// the file is open, and is shared by every connection to the file, so a
// page faults in once per process. SQLite's page cache, and what it
// caches, are unchanged.
//
// Why it is safe:
//   - It never opens or closes a descriptor of the file. POSIX locks belong
//     to the process: closing any descriptor of a file drops every lock the
//     process holds on it, and SQLite in WAL mode relies on its SHARED lock
//     on the database file to keep other processes from deleting the WAL
//     under it (sqlite.org/howtocorrupt.html, 2.2). The map is made from
//     the descriptor the unix VFS itself opened for the connection, and
//     only mmap and munmap touch it; the unix VFS keeps, and closes, its
//     descriptors as it always does.
//   - A read from the map sees exactly what pread would. The map is
//     MAP_SHARED and read-only, and Linux keeps one page cache per file, so
//     a write through any descriptor, in any process, shows in the map at
//     once; SQLite's locking decides, as before, which bytes a reader may
//     read.
//   - Touching a mapped page beyond the end of the file raises SIGBUS. So
//     the map only serves bytes below the size this process last saw: a
//     write through this VFS raises it after the write, a read past it asks
//     the file's size (one fstat, which also sees what other processes
//     wrote), a truncation through this VFS lowers it before the
//     truncation, and every other read goes to pread. SQLite's locks keep
//     truncations by SQLite, in any process (checkpoints, VACUUM), away
//     from bytes a reader still needs.
//   - A read error is an error, as with pread, not the end of the process.
//     A page the kernel cannot read for the map (the disk answered EIO; a
//     program cut the file outside SQLite's locking, which the size above
//     cannot see) raises SIGBUS, where SQLite's own memory map dies
//     (sqlite.org/mmap.html). Each copy from the map is guarded (see
//     guarded_copy): the fault jumps back into the read, which reads those
//     bytes with pread instead and answers what the unix VFS would.
//   - Writes are the unix VFS's own, one call each, so an error is returned
//     by the call that caused it, and no byte SQLite believes written waits
//     in a buffer.
//
// Everything else is the unix VFS's own code: the file object is the unix
// VFS's, followed by a few bytes of ours, and only xClose, xRead, xWrite
// and xTruncate are replaced, in a copy of its method table.
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "capi.h"

// How much address space one file's map reserves. Pages are mapped as the
// file grows into it; the reservation itself costs no memory.
#define MAP_RESERVE ((sqlite3_int64)64 << 30)

// One map per database file (device and inode) in this process, shared by
// every connection that has the file open.
typedef struct lite_map {
	dev_t dev;
	ino_t ino;
	unsigned char *base;
	sqlite3_int64 size; // bytes safe to read through base; atomic
	int refs;           // under map_mu
	struct lite_map *next;
} lite_map;

// What this VFS keeps after the unix VFS's file object.
typedef struct lite_mapstate {
	lite_map *map;                  // 0: not mapped, every method is unix's
	const sqlite3_io_methods *base; // the unix VFS's methods for the file
} lite_mapstate;

// The first fields of the unix VFS's file object (struct unixFile in
// os_unix.c, unchanged since SQLite 3.7): the descriptor it opened is h.
// map_open checks that what it reads there is a descriptor of the file it
// opened, and leaves the file unmapped if not.
typedef struct unix_file_head {
	const sqlite3_io_methods *pMethod;
	sqlite3_vfs *pVfs;
	void *pInode;
	int h;
} unix_file_head;

static pthread_mutex_t map_mu = PTHREAD_MUTEX_INITIALIZER;
static lite_map *maps;
static sqlite3_vfs *base_vfs;
static sqlite3_vfs map_vfs;
static int state_offset;
// The unix VFS gives a database file one method table and a WAL file
// another (without locks); this VFS keeps a copy of each with its own
// methods in place of four. Under map_mu.
static struct {
	const sqlite3_io_methods *base;
	sqlite3_io_methods mapped;
} tables[2];

static lite_mapstate *state_of(sqlite3_file *f) { return (lite_mapstate *)((char *)f + state_offset); }

static sqlite3_int64 load64(sqlite3_int64 *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

// The guarded copy. A read through a memory map that the kernel cannot
// satisfy (the disk answered EIO; the file was cut shorter behind the
// map's back) is not an error code but a SIGBUS, and a SIGBUS in cgo code
// ends a Go program. So each copy from a map runs under a guard: this
// thread's guard names the map's address range and where to jump, and
// the process's SIGBUS handler, when the fault is a guarded copy's on this
// thread, restores the signal mask the fault interrupted and jumps back
// into map_read, which then reads those bytes with the unix VFS's own
// pread: the statement gets the error SQLite's reads always give (EIO is
// SQLITE_IOERR_CORRUPTFS), or the bytes, if the disk answers this time.
// Any other SIGBUS goes to the handler that was there before this one,
// Go's, with its arguments unchanged, as Go's documentation asks of a
// handler installed by C code (os/signal, "Go programs that use cgo"):
// Go's runtime.SetPanicOnFault and its crash reports work as before.
// sigsetjmp without the signal mask costs a few stores and no system
// call; the mask is restored by the handler, only when a copy faulted.
typedef struct lite_guard {
	sigjmp_buf jump;
	const unsigned char *lo, *hi; // the map's range
} lite_guard;

// initial-exec: a signal handler must not meet a lazily allocated TLS block.
static __thread lite_guard *volatile guard __attribute__((tls_model("initial-exec")));
static struct sigaction before_sigbus; // the SIGBUS handler before ours
static pthread_once_t sigbus_once = PTHREAD_ONCE_INIT;
static int sigbus_ok;                  // 1 once ours is installed

static void on_sigbus(int sig, siginfo_t *info, void *uc) {
	lite_guard *g = guard;
	const unsigned char *at = (const unsigned char *)info->si_addr;
	if (g && at >= g->lo && at < g->hi) {
		guard = 0;
		pthread_sigmask(SIG_SETMASK, &((ucontext_t *)uc)->uc_sigmask, 0);
		siglongjmp(g->jump, 1);
	}
	if (before_sigbus.sa_flags & SA_SIGINFO) {
		before_sigbus.sa_sigaction(sig, info, uc);
	} else if (before_sigbus.sa_handler != SIG_DFL && before_sigbus.sa_handler != SIG_IGN) {
		before_sigbus.sa_handler(sig);
	} else {
		// No handler before: the default action, once this returns and
		// the access faults again.
		signal(SIGBUS, SIG_DFL);
	}
}

static void install_sigbus(void) {
	struct sigaction sa;
	if (sigaction(SIGBUS, 0, &before_sigbus) != 0) return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	// Go's handlers run on the thread's signal stack, with every signal
	// blocked; so does this one.
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigfillset(&sa.sa_mask);
	sigbus_ok = sigaction(SIGBUS, &sa, 0) == 0;
}

// guarded_copy copies amt bytes at off from m into buf and answers 1, or
// answers 0 if the copy faulted (buf then holds part of the bytes).
static int guarded_copy(lite_map *m, void *buf, int amt, sqlite3_int64 off) {
	lite_guard g;
	g.lo = m->base;
	g.hi = m->base + MAP_RESERVE;
	if (sigsetjmp(g.jump, 0) != 0) return 0;
	guard = &g;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	memcpy(buf, m->base + off, (size_t)amt);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	guard = 0;
	return 1;
}

// map_acquire returns the map of the file whose descriptor (the unix VFS's
// own) is fd, creating it if this is the first connection to the file, or
// 0 if it cannot be mapped (the connection then reads as the unix VFS
// does). It never closes fd: see the top of the file.
static lite_map *map_acquire(int fd, const struct stat *st) {
	pthread_mutex_lock(&map_mu);
	lite_map *m = maps;
	while (m && !(m->dev == st->st_dev && m->ino == st->st_ino)) m = m->next;
	if (m) {
		m->refs++;
	} else {
		void *base = mmap(0, (size_t)MAP_RESERVE, PROT_READ, MAP_SHARED, fd, 0);
		m = base == MAP_FAILED ? 0 : calloc(1, sizeof(lite_map));
		if (m) {
			m->dev = st->st_dev;
			m->ino = st->st_ino;
			m->base = base;
			m->size = st->st_size;
			m->refs = 1;
			m->next = maps;
			maps = m;
		} else if (base != MAP_FAILED) {
			munmap(base, (size_t)MAP_RESERVE);
		}
	}
	pthread_mutex_unlock(&map_mu);
	return m;
}

static void map_release(lite_map *m) {
	pthread_mutex_lock(&map_mu);
	if (--m->refs == 0) {
		lite_map **p = &maps;
		while (*p != m) p = &(*p)->next;
		*p = m->next;
		munmap(m->base, (size_t)MAP_RESERVE);
		free(m);
	}
	pthread_mutex_unlock(&map_mu);
}

// set_size sets m's size to n, atomically, if that raises it (raise) or
// lowers it (!raise); otherwise it leaves it.
static void set_size(lite_map *m, sqlite3_int64 n, int raise) {
	sqlite3_int64 cur = load64(&m->size);
	while ((raise ? n > cur : n < cur) && !__atomic_compare_exchange_n(&m->size, &cur, n, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
	}
}

// map_write writes through the unix VFS, then raises the size the map may
// serve: only after the write, since until then those bytes may lie beyond
// the end of the file.
static int map_write(sqlite3_file *f, const void *buf, int amt, sqlite3_int64 off) {
	lite_mapstate *s = state_of(f);
	int rc = s->base->xWrite(f, buf, amt, off);
	if (rc == LITE_OK) set_size(s->map, off + amt, 1);
	return rc;
}

static int map_close(sqlite3_file *f) {
	lite_map *m = state_of(f)->map;
	int rc = state_of(f)->base->xClose(f);
	if (m) map_release(m);
	return rc;
}

// map_read copies from the map what lies below the size last seen. A read
// past it first asks the file's size (another process may have written
// there) and leaves what is still past it (a read past the end of the
// file) to the unix VFS.
static int map_read(sqlite3_file *f, void *buf, int amt, sqlite3_int64 off) {
	lite_mapstate *s = state_of(f);
	lite_map *m = s->map;
	if (off + amt <= MAP_RESERVE) {
		if (off + amt > load64(&m->size)) {
			sqlite3_int64 size;
			if (s->base->xFileSize(f, &size) == LITE_OK) set_size(m, size, 1);
		}
		if (off + amt <= load64(&m->size)) {
			if (guarded_copy(m, buf, amt, off)) return LITE_OK;
			// The page could not be read through the map: the file's
			// size again (it may have been cut), and the unix VFS's
			// read, which answers what the disk does.
			sqlite3_int64 size;
			if (s->base->xFileSize(f, &size) == LITE_OK) set_size(m, size, 0);
		}
	}
	return s->base->xRead(f, buf, amt, off);
}

static int map_truncate(sqlite3_file *f, sqlite3_int64 size) {
	// Before the truncation, so no read of the map can land past the new end.
	set_size(state_of(f)->map, size, 0);
	return state_of(f)->base->xTruncate(f, size);
}

// mapped_methods answers this VFS's copy of base, making it the first time
// base is seen; 0 if there are already two others (not the unix VFS).
static const sqlite3_io_methods *mapped_methods(const sqlite3_io_methods *base) {
	const sqlite3_io_methods *out = 0;
	pthread_mutex_lock(&map_mu);
	for (int i = 0; i < 2 && !out; i++) {
		if (!tables[i].base) {
			sqlite3_io_methods *m = &tables[i].mapped;
			*m = *base;
			m->xClose = map_close;
			m->xRead = map_read;
			m->xWrite = map_write;
			m->xTruncate = map_truncate;
			tables[i].base = base;
		}
		if (tables[i].base == base) out = &tables[i].mapped;
	}
	pthread_mutex_unlock(&map_mu);
	return out;
}

// unix_fd answers the descriptor the unix VFS opened for f, the file named
// name, with its fstat in *st; -1 if f does not look like the unix VFS's
// file object or its descriptor is not name's (then f is left unmapped).
// stat(2) on the name opens nothing.
static int unix_fd(sqlite3_file *f, const char *name, struct stat *st) {
	const unix_file_head *u = (const unix_file_head *)f;
	struct stat byname;
	if (u->pVfs != base_vfs || u->pMethod != f->pMethods || u->h < 0) return -1;
	if (fstat(u->h, st) != 0 || !S_ISREG(st->st_mode)) return -1;
	if (stat(name, &byname) != 0 || byname.st_dev != st->st_dev || byname.st_ino != st->st_ino) return -1;
	return u->h;
}

static int map_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out) {
	lite_mapstate *s = state_of(f);
	memset(s, 0, sizeof(*s));
	int rc = base_vfs->xOpen(base_vfs, name, f, flags, out);
	if (rc != LITE_OK || !(flags & (LITE_OPEN_MAIN_DB | LITE_OPEN_WAL)) || !name || !f->pMethods) return rc;
	struct stat st;
	int fd = unix_fd(f, name, &st);
	if (fd < 0) return rc;
	const sqlite3_io_methods *m = mapped_methods(f->pMethods);
	if (m && (s->map = map_acquire(fd, &st))) {
		s->base = f->pMethods;
		f->pMethods = m;
	}
	return rc;
}

// lite_map_register registers the VFS as "sqlitedb", wrapping the default
// VFS as it is now. It does not make it the default. It answers
// LITE_ERROR, registering nothing, where the VFS cannot work: a 32-bit
// address space (no room to reserve), or a default VFS that is not unix.
int lite_map_register(void) {
	if (sizeof(void *) < 8) return LITE_ERROR;
	pthread_once(&sigbus_once, install_sigbus);
	if (!sigbus_ok) return LITE_ERROR;
	base_vfs = sqlite3_vfs_find(0);
	if (!base_vfs || strcmp(base_vfs->zName, "unix") != 0) return LITE_ERROR;
	map_vfs = *base_vfs;
	state_offset = (base_vfs->szOsFile + 15) & ~15;
	map_vfs.szOsFile = state_offset + (int)sizeof(lite_mapstate);
	map_vfs.zName = "sqlitedb";
	map_vfs.pNext = 0;
	map_vfs.xOpen = map_open;
	return sqlite3_vfs_register(&map_vfs, 0);
}

// lite_map_has answers 1 if the file (device and inode) is mapped now.
int lite_map_has(unsigned long long dev, unsigned long long ino) {
	int has = 0;
	pthread_mutex_lock(&map_mu);
	for (lite_map *m = maps; m && !has; m = m->next) has = (unsigned long long)m->dev == dev && (unsigned long long)m->ino == ino;
	pthread_mutex_unlock(&map_mu);
	return has;
}

// lite_map_count answers how many files are mapped now (for tests).
int lite_map_count(void) {
	int n = 0;
	pthread_mutex_lock(&map_mu);
	for (lite_map *m = maps; m; m = m->next) n++;
	pthread_mutex_unlock(&map_mu);
	return n;
}
