// The declarations of SQLite's C API that the fault VFS uses are the
// package's own (sqlitedb/capi.h); the functions are the ones
// github.com/mattn/go-sqlite3 compiles into the binary.
#include "../../capi.h"

int sqlite3_vfs_unregister(sqlite3_vfs *);

// SQLite's result codes the fault VFS answers.
#define FAULT_OK 0
#define FAULT_ERROR 1
#define FAULT_MISUSE 21
#define FAULT_FULL 13
#define FAULT_IOERR_READ (10 | (1 << 8))
#define FAULT_IOERR_WRITE (10 | (3 << 8))
#define FAULT_IOERR_FSYNC (10 | (4 << 8))
#define FAULT_IOERR_TRUNCATE (10 | (6 << 8))
#define FAULT_IOERR_FSTAT (10 | (7 << 8))
#define FAULT_OPEN_MAIN_DB 0x00000100
#define FAULT_OPEN_WAL 0x00080000

// The calls counted, and the faults that fail them.
enum { CALL_READ, CALL_WRITE, CALL_SYNC, CALL_TRUNCATE, CALL_FILESIZE, NCALLS };
enum { FAULT_KIND_READ, FAULT_KIND_WRITE, FAULT_KIND_SYNC, FAULT_KIND_TRUNCATE, FAULT_KIND_FILESIZE, FAULT_KIND_FULL };

int fault_register(const char *base);
void fault_arm(int kind, long long n, int persistent);
void fault_disarm(void);
void fault_reset(void);
long long fault_count(int call);
long long fault_injected(void);
int fault_open_files(void);
