//go:build unix

// The "sqlitedb" VFS: SQLite's default VFS ("unix"), except that the
// database file and its WAL are each memory-mapped once per process, a
// read of either copies from that map instead of calling pread, and a
// transaction's WAL frames are written at once (see map_write).
//
// Why: in WAL mode, a connection whose read transaction starts after
// another connection committed empties its page cache, so it reads every
// page it needs again, one pread each. On a server where nearly every
// request commits, that is every read: about twenty system calls for a
// page of Lorem News. From the map, each is a copy of 4 KiB, and no system
// call. SQLite's own memory map (PRAGMA mmap_size) does not help here: it
// unmaps the whole file whenever the page cache is emptied, and every page
// faults again. This map is never unmapped while the file is open, and is
// shared by every connection to the file, so a page faults in once per
// process. SQLite's page cache, and what it caches, are unchanged.
//
// Why it is safe: a read from the map sees exactly what pread would. The
// map is MAP_SHARED and read-only, and Linux keeps one page cache per
// file, so a write through any file descriptor, in any process, shows in
// the map at once; SQLite's locking decides, as before, which bytes a
// reader may read. The one new rule is the file's size: touching a mapped
// page beyond the end of the file raises SIGBUS. So the map only serves
// bytes below the size this process last saw: a write through this VFS
// raises it after the write, a truncation lowers it before the truncation,
// and every other read goes to pread as before. A file that another
// process truncates while this one reads the truncated part is the one
// case it cannot see; SQLite's own memory map has the same limit
// (https://sqlite.org/mmap.html), and SQLite's locks keep its own
// truncations (checkpoints, VACUUM) away from bytes a reader still needs.
//
// Everything else is the unix VFS's own code: the file object is the unix
// VFS's, followed by a few bytes of ours, and only the methods below are
// replaced, in a copy of its method table.
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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
	// A WAL's writes not yet written (see map_write): wlen bytes from woff.
	int wal;
	unsigned char *wbuf;
	int wlen;
	int wcommit; // the last bytes gathered are a commit frame's header
	sqlite3_int64 woff;
	sqlite3_int64 wend; // the end of this connection's last frame appended
} lite_mapstate;

// How many bytes of a WAL's writes are gathered at most before they are
// written: 31 frames of 4 KiB pages.
#define WAL_GATHER (128 << 10)
// A WAL frame's header: 24 bytes, whose bytes 4 to 7 are, in a transaction's
// last frame only, the database's size in pages after it (sqlite.org/fileformat.html).
#define WAL_FRAME_HEADER 24
// The WAL file's own header, at its start.
#define WAL_HEADER 32

static pthread_mutex_t map_mu = PTHREAD_MUTEX_INITIALIZER;
static lite_map *maps;
static sqlite3_vfs *base_vfs;
static sqlite3_vfs map_vfs;
static int state_offset;
// The unix VFS gives a database file one method table and a WAL file
// another (without locks); this VFS keeps a copy of each with its own
// methods in place of six. Under map_mu.
static struct {
	const sqlite3_io_methods *base;
	sqlite3_io_methods mapped;
} tables[2];

// How many writes this VFS has made to WAL files (for tests).
static sqlite3_int64 wal_writes;

static lite_mapstate *state_of(sqlite3_file *f) { return (lite_mapstate *)((char *)f + state_offset); }

static sqlite3_int64 load64(sqlite3_int64 *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

// map_acquire returns the map of the file at path, creating it if this is
// the first connection to it, or 0 if it cannot be mapped (the connection
// then reads as the unix VFS does).
static lite_map *map_acquire(const char *path) {
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) return 0;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	pthread_mutex_lock(&map_mu);
	lite_map *m = maps;
	while (m && !(m->dev == st.st_dev && m->ino == st.st_ino)) m = m->next;
	if (m) {
		m->refs++;
	} else {
		void *base = mmap(0, (size_t)MAP_RESERVE, PROT_READ, MAP_SHARED, fd, 0);
		m = base == MAP_FAILED ? 0 : calloc(1, sizeof(lite_map));
		if (m) {
			m->dev = st.st_dev;
			m->ino = st.st_ino;
			m->base = base;
			m->size = st.st_size;
			m->refs = 1;
			m->next = maps;
			maps = m;
		} else if (base != MAP_FAILED) {
			munmap(base, (size_t)MAP_RESERVE);
		}
	}
	pthread_mutex_unlock(&map_mu);
	close(fd);
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

// raw_write writes through the unix VFS, then raises the size the map may
// serve: only after the write, since until then those bytes may lie beyond
// the end of the file.
static int raw_write(sqlite3_file *f, const void *buf, int amt, sqlite3_int64 off) {
	lite_mapstate *s = state_of(f);
	if (s->wal) __atomic_fetch_add(&wal_writes, 1, __ATOMIC_RELAXED);
	int rc = s->base->xWrite(f, buf, amt, off);
	if (rc == LITE_OK) set_size(s->map, off + amt, 1);
	return rc;
}

// flush writes a WAL's gathered bytes.
static int flush(sqlite3_file *f) {
	lite_mapstate *s = state_of(f);
	if (s->wlen == 0) return LITE_OK;
	int rc = raw_write(f, s->wbuf, s->wlen, s->woff);
	s->wlen = 0;
	s->wcommit = 0;
	return rc;
}

// wal_header reports whether a write is the WAL's own 32-byte header, which
// SQLite writes at offset 0 when the WAL starts over.
static int wal_header(int amt, sqlite3_int64 off) { return amt == WAL_HEADER && off == 0; }

static int commit_header(const void *buf, int amt) {
	const unsigned char *p = buf;
	return amt == WAL_FRAME_HEADER && (p[4] | p[5] | p[6] | p[7]);
}

// map_write gathers a WAL's writes and writes them at once. SQLite writes
// each frame of a transaction as two writes, its 24-byte header and its
// page, one after the other; gathered, a transaction of n frames costs one
// write(2) instead of 2n. The frames are written, at the latest, with the
// page of the transaction's last frame (the one whose header holds the
// database size), before SQLite publishes the commit in the wal-index, so
// no reader, in this process or another, can look for a frame not yet in
// the file, and a commit that returned is in the file (as without
// gathering: synchronous=NORMAL does not sync it). Everything else that
// touches the WAL through this connection (a read, a sync, its size, a
// truncation, close, a write that is not the next byte) writes the
// gathered bytes first. A gathered run starts only at the WAL's own 32-byte
// header or at a frame's header: one that is not a commit's, or a commit's
// appended after this connection's last frame, whose page follows at once.
// (SQLite also rewrites a commit's header alone, to correct its checksum;
// that one is written as it comes.)
static int map_write(sqlite3_file *f, const void *buf, int amt, sqlite3_int64 off) {
	lite_mapstate *s = state_of(f);
	if (!s->wal) return raw_write(f, buf, amt, off);
	if (wal_header(amt, off)) s->wend = 0; // the WAL starts over
	int appended = off >= s->wend;
	if (off + amt > s->wend) s->wend = off + amt;
	if (s->wlen > 0 && off == s->woff + s->wlen && s->wlen + amt <= WAL_GATHER) {
		memcpy(s->wbuf + s->wlen, buf, (size_t)amt);
		s->wlen += amt;
		if (s->wcommit) return flush(f); // the commit frame's page
		s->wcommit = commit_header(buf, amt);
		return LITE_OK;
	}
	int rc = flush(f);
	if (rc != LITE_OK) return rc;
	if ((amt == WAL_FRAME_HEADER && (appended || !commit_header(buf, amt))) || wal_header(amt, off)) {
		if (!s->wbuf) s->wbuf = malloc(WAL_GATHER);
		if (s->wbuf) {
			memcpy(s->wbuf, buf, (size_t)amt);
			s->woff = off;
			s->wlen = amt;
			s->wcommit = commit_header(buf, amt);
			return LITE_OK;
		}
	}
	return raw_write(f, buf, amt, off);
}

static int map_close(sqlite3_file *f) {
	lite_mapstate *s = state_of(f);
	lite_map *m = s->map;
	unsigned char *wbuf = s->wbuf;
	int rc = flush(f);
	int rc2 = s->base->xClose(f);
	free(wbuf);
	if (m) map_release(m);
	return rc != LITE_OK ? rc : rc2;
}

// map_read copies from the map what lies below the size last seen, and
// leaves the rest (a read past the end of the file) to the unix VFS.
static int map_read(sqlite3_file *f, void *buf, int amt, sqlite3_int64 off) {
	lite_mapstate *s = state_of(f);
	int rc = flush(f);
	if (rc != LITE_OK) return rc;
	lite_map *m = s->map;
	if (off + amt <= load64(&m->size) && off + amt <= MAP_RESERVE) {
		memcpy(buf, m->base + off, (size_t)amt);
		return LITE_OK;
	}
	return s->base->xRead(f, buf, amt, off);
}

static int map_truncate(sqlite3_file *f, sqlite3_int64 size) {
	int rc = flush(f);
	if (rc != LITE_OK) return rc;
	// Before the truncation, so no read of the map can land past the new end.
	set_size(state_of(f)->map, size, 0);
	return state_of(f)->base->xTruncate(f, size);
}

static int map_sync(sqlite3_file *f, int flags) {
	int rc = flush(f);
	return rc != LITE_OK ? rc : state_of(f)->base->xSync(f, flags);
}

static int map_file_size(sqlite3_file *f, sqlite3_int64 *size) {
	int rc = flush(f);
	return rc != LITE_OK ? rc : state_of(f)->base->xFileSize(f, size);
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
			m->xSync = map_sync;
			m->xFileSize = map_file_size;
			tables[i].base = base;
		}
		if (tables[i].base == base) out = &tables[i].mapped;
	}
	pthread_mutex_unlock(&map_mu);
	return out;
}

static int map_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out) {
	lite_mapstate *s = state_of(f);
	memset(s, 0, sizeof(*s));
	int rc = base_vfs->xOpen(base_vfs, name, f, flags, out);
	if (rc != LITE_OK || !(flags & (LITE_OPEN_MAIN_DB | LITE_OPEN_WAL)) || !name || !f->pMethods) return rc;
	const sqlite3_io_methods *m = mapped_methods(f->pMethods);
	if (m && (s->map = map_acquire(name))) {
		s->base = f->pMethods;
		s->wal = (flags & LITE_OPEN_WAL) != 0;
		f->pMethods = m;
	}
	return rc;
}

// lite_map_register registers the VFS as "sqlitedb", wrapping the default
// VFS as it is now. It does not make it the default.
int lite_map_register(void) {
	if (sizeof(void *) < 8) return LITE_ERROR; // no address space to reserve
	base_vfs = sqlite3_vfs_find(0);
	if (!base_vfs) return LITE_ERROR;
	map_vfs = *base_vfs;
	state_offset = (base_vfs->szOsFile + 15) & ~15;
	map_vfs.szOsFile = state_offset + (int)sizeof(lite_mapstate);
	map_vfs.zName = "sqlitedb";
	map_vfs.pNext = 0;
	map_vfs.xOpen = map_open;
	return sqlite3_vfs_register(&map_vfs, 0);
}

// lite_map_count answers how many files are mapped now (for tests).
int lite_map_count(void) {
	int n = 0;
	pthread_mutex_lock(&map_mu);
	for (lite_map *m = maps; m; m = m->next) n++;
	pthread_mutex_unlock(&map_mu);
	return n;
}

// lite_wal_writes answers how many writes this VFS has made to WAL files.
sqlite3_int64 lite_wal_writes(void) { return __atomic_load_n(&wal_writes, __ATOMIC_RELAXED); }
