// The few declarations of SQLite's C API that the row reader uses. The
// functions themselves are the ones github.com/mattn/go-sqlite3 compiles
// into the binary (with the build's CGO_CFLAGS), so there is one SQLite in
// the program and its compile-time options are the build's. The
// declarations match sqlite3.h exactly; the constants are SQLite's stable
// result and type codes.
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
int sqlite3_clear_bindings(sqlite3_stmt *pStmt);
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
int sqlite3_extended_errcode(sqlite3 *db);
int sqlite3_stmt_readonly(sqlite3_stmt *pStmt);
sqlite3_int64 sqlite3_changes64(sqlite3 *db);
sqlite3_int64 sqlite3_last_insert_rowid(sqlite3 *db);
void *sqlite3_wal_hook(sqlite3 *db, int (*xCallback)(void *, sqlite3 *, const char *, int), void *pArg);
