// The few declarations of SQLite's C API that the handles use. The
// functions themselves are the ones github.com/mattn/go-sqlite3 compiles
// into the binary (with the build's CGO_CFLAGS), so there is one SQLite in
// the program and its compile-time options are the build's. The
// declarations match sqlite3.h exactly; the constants are SQLite's stable
// result and type codes.
#ifndef LITE_CAPI_H
#define LITE_CAPI_H

#include <stdint.h>
#include <string.h>

typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;
typedef struct sqlite3_context sqlite3_context;
typedef struct sqlite3_value sqlite3_value;
typedef struct sqlite3_api_routines sqlite3_api_routines;
typedef long long sqlite3_int64;

#define LITE_OK 0
#define LITE_ROW 100
#define LITE_DONE 101
#define LITE_INTEGER 1
#define LITE_FLOAT 2
#define LITE_TEXT 3
#define LITE_BLOB 4
#define LITE_NULL 5
#define LITE_UTF8 1
#define LITE_DIRECTONLY 0x000080000
#define LITE_PREPARE_PERSISTENT 0x01

int sqlite3_auto_extension(void (*xEntryPoint)(void));
int sqlite3_create_function_v2(sqlite3 *db, const char *zFunctionName, int nArg, int eTextRep, void *pApp,
	void (*xFunc)(sqlite3_context *, int, sqlite3_value **), void (*xStep)(sqlite3_context *, int, sqlite3_value **),
	void (*xFinal)(sqlite3_context *), void (*xDestroy)(void *));
sqlite3 *sqlite3_context_db_handle(sqlite3_context *);
void sqlite3_result_int64(sqlite3_context *, sqlite3_int64);

int sqlite3_prepare_v3(sqlite3 *db, const char *zSql, int nByte, unsigned int prepFlags, sqlite3_stmt **ppStmt, const char **pzTail);
int sqlite3_finalize(sqlite3_stmt *pStmt);
int sqlite3_reset(sqlite3_stmt *pStmt);
int sqlite3_step(sqlite3_stmt *pStmt);
int sqlite3_bind_parameter_count(sqlite3_stmt *pStmt);
int sqlite3_bind_int64(sqlite3_stmt *pStmt, int i, sqlite3_int64 v);
int sqlite3_bind_double(sqlite3_stmt *pStmt, int i, double v);
int sqlite3_bind_null(sqlite3_stmt *pStmt, int i);
int sqlite3_bind_text(sqlite3_stmt *pStmt, int i, const char *z, int n, void (*xDel)(void *));
int sqlite3_bind_blob(sqlite3_stmt *pStmt, int i, const void *z, int n, void (*xDel)(void *));
int sqlite3_column_count(sqlite3_stmt *pStmt);
int sqlite3_column_type(sqlite3_stmt *pStmt, int iCol);
sqlite3_int64 sqlite3_column_int64(sqlite3_stmt *pStmt, int iCol);
double sqlite3_column_double(sqlite3_stmt *pStmt, int iCol);
const unsigned char *sqlite3_column_text(sqlite3_stmt *pStmt, int iCol);
const void *sqlite3_column_blob(sqlite3_stmt *pStmt, int iCol);
int sqlite3_column_bytes(sqlite3_stmt *pStmt, int iCol);
const char *sqlite3_errmsg(sqlite3 *db);
void sqlite3_interrupt(sqlite3 *db);
int sqlite3_extended_errcode(sqlite3 *db);
int sqlite3_system_errno(sqlite3 *db);
sqlite3_int64 sqlite3_changes64(sqlite3 *db);
sqlite3_int64 sqlite3_last_insert_rowid(sqlite3 *db);
void *sqlite3_commit_hook(sqlite3 *db, int (*xCallback)(void *), void *pArg);
void *sqlite3_rollback_hook(sqlite3 *db, void (*xCallback)(void *), void *pArg);
int sqlite3_db_config(sqlite3 *db, int op, ...);
#define LITE_DBCONFIG_NO_CKPT_ON_CLOSE 1006

// lite_hooks is what a connection's commit and rollback hooks (conn.go)
// share with the Go side, which reads and sets it between statements on
// the goroutine that has the connection.
typedef struct lite_hooks {
	// The commit hook lets a commit through only while this is 1; with 0
	// it turns the commit into a rollback (the statement fails with
	// SQLITE_CONSTRAINT_COMMITHOOK).
	int allow_commit;
	// rollbacks counts the transactions rolled back on the connection,
	// whoever ended them: a ROLLBACK, or SQLite on its own after an error.
	unsigned int rollbacks;
} lite_hooks;
void *sqlite3_wal_hook(sqlite3 *db, int (*xCallback)(void *, sqlite3 *, const char *, int), void *pArg);

// The VFS interface (sqlite3.h's definitions, version 3), for mapvfs.c.
#define LITE_ERROR 1
#define LITE_OPEN_MAIN_DB 0x00000100
#define LITE_OPEN_WAL 0x00080000

typedef struct sqlite3_file sqlite3_file;
typedef struct sqlite3_io_methods sqlite3_io_methods;
typedef struct sqlite3_vfs sqlite3_vfs;
typedef void (*sqlite3_syscall_ptr)(void);

struct sqlite3_file {
	const struct sqlite3_io_methods *pMethods;
};

struct sqlite3_io_methods {
	int iVersion;
	int (*xClose)(sqlite3_file *);
	int (*xRead)(sqlite3_file *, void *, int iAmt, sqlite3_int64 iOfst);
	int (*xWrite)(sqlite3_file *, const void *, int iAmt, sqlite3_int64 iOfst);
	int (*xTruncate)(sqlite3_file *, sqlite3_int64 size);
	int (*xSync)(sqlite3_file *, int flags);
	int (*xFileSize)(sqlite3_file *, sqlite3_int64 *pSize);
	int (*xLock)(sqlite3_file *, int);
	int (*xUnlock)(sqlite3_file *, int);
	int (*xCheckReservedLock)(sqlite3_file *, int *pResOut);
	int (*xFileControl)(sqlite3_file *, int op, void *pArg);
	int (*xSectorSize)(sqlite3_file *);
	int (*xDeviceCharacteristics)(sqlite3_file *);
	int (*xShmMap)(sqlite3_file *, int iPg, int pgsz, int, void volatile **);
	int (*xShmLock)(sqlite3_file *, int offset, int n, int flags);
	void (*xShmBarrier)(sqlite3_file *);
	int (*xShmUnmap)(sqlite3_file *, int deleteFlag);
	int (*xFetch)(sqlite3_file *, sqlite3_int64 iOfst, int iAmt, void **pp);
	int (*xUnfetch)(sqlite3_file *, sqlite3_int64 iOfst, void *p);
};

struct sqlite3_vfs {
	int iVersion;
	int szOsFile;
	int mxPathname;
	sqlite3_vfs *pNext;
	const char *zName;
	void *pAppData;
	int (*xOpen)(sqlite3_vfs *, const char *zName, sqlite3_file *, int flags, int *pOutFlags);
	int (*xDelete)(sqlite3_vfs *, const char *zName, int syncDir);
	int (*xAccess)(sqlite3_vfs *, const char *zName, int flags, int *pResOut);
	int (*xFullPathname)(sqlite3_vfs *, const char *zName, int nOut, char *zOut);
	void *(*xDlOpen)(sqlite3_vfs *, const char *zFilename);
	void (*xDlError)(sqlite3_vfs *, int nByte, char *zErrMsg);
	void (*(*xDlSym)(sqlite3_vfs *, void *, const char *zSymbol))(void);
	void (*xDlClose)(sqlite3_vfs *, void *);
	int (*xRandomness)(sqlite3_vfs *, int nByte, char *zOut);
	int (*xSleep)(sqlite3_vfs *, int microseconds);
	int (*xCurrentTime)(sqlite3_vfs *, double *);
	int (*xGetLastError)(sqlite3_vfs *, int, char *);
	int (*xCurrentTimeInt64)(sqlite3_vfs *, sqlite3_int64 *);
	int (*xSetSystemCall)(sqlite3_vfs *, const char *zName, sqlite3_syscall_ptr);
	sqlite3_syscall_ptr (*xGetSystemCall)(sqlite3_vfs *, const char *zName);
	const char *(*xNextSystemCall)(sqlite3_vfs *, const char *zName);
};

#define LITE_FCNTL_LAST_ERRNO 4
#define LITE_FCNTL_FILE_POINTER 7
#define LITE_FCNTL_PERSIST_WAL 10
#define LITE_SYNC_NORMAL 0x00002
#define LITE_BUSY 5
#define LITE_SHM_UNLOCK 1
#define LITE_SHM_LOCK 2
#define LITE_SHM_EXCLUSIVE 8
int sqlite3_file_control(sqlite3 *, const char *zDbName, int op, void *);

sqlite3_vfs *sqlite3_vfs_find(const char *zVfsName);
int sqlite3_vfs_register(sqlite3_vfs *, int makeDflt);
int lite_map_register(void); // mapvfs.c, unix only
int lite_map_count(void);
int lite_map_has(unsigned long long dev, unsigned long long ino);

// lite_main_file sets *f to the connection's own file object of its main
// database, with its methods.
static inline int lite_main_file(sqlite3 *db, sqlite3_file **f) {
	int rc = sqlite3_file_control(db, "main", LITE_FCNTL_FILE_POINTER, f);
	if (rc != LITE_OK) return rc;
	return *f && (*f)->pMethods ? LITE_OK : LITE_ERROR;
}

// lite_wal_index sets *index to the first 32 KiB region of the
// connection's WAL index (its -shm), as the connection has it mapped,
// and *f to its main database file. It answers LITE_ERROR when the VFS
// has no shared memory or the region is not mapped; the connection must
// be idle and used by one thread, with the WAL index open (it has read
// the file or checkpointed).
static inline int lite_wal_index(sqlite3 *db, sqlite3_file **f, volatile void **index) {
	int rc = lite_main_file(db, f);
	if (rc != LITE_OK) return rc;
	if ((*f)->pMethods->iVersion < 2) return LITE_ERROR;
	rc = (*f)->pMethods->xShmMap(*f, 0, 32768, 0, index);
	if (rc != LITE_OK) return rc;
	return *index ? LITE_OK : LITE_ERROR;
}

#endif
