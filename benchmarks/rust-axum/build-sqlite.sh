#!/bin/sh
# Builds libsqlite3.a from the SQLite amalgamation that the Go binary links
# (github.com/mattn/go-sqlite3 v1.14.53, sqlite3-binding.c), with the flags
# cmd/go compiles it with for `make build`: cgo's own for linux/amd64
# (go env GOGCCFLAGS: -fPIC -m64 -pthread), then CGO_CFLAGS as the Makefile
# exports it (-O2, SQLITE_CFLAGS, SQLITE_TUNING), then go-sqlite3's #cgo
# CFLAGS (sqlite3.go), in that order. Output: $OUT/libsqlite3.a and
# $OUT/sqlite3.h.
# Usage: ./build-sqlite.sh [OUT]   (default OUT: ./sqlite-lib)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-$here/sqlite-lib}
GOMODCACHE=${GOMODCACHE:-$(go env GOMODCACHE)}
SRC=$GOMODCACHE/github.com/mattn/go-sqlite3@v1.14.53
[ -f "$SRC/sqlite3-binding.c" ] || { echo "no amalgamation at $SRC (go mod download github.com/mattn/go-sqlite3@v1.14.53)" >&2; exit 1; }
mkdir -p "$OUT"
# go-sqlite3's sqlite3.go, linux: #cgo CFLAGS
GO_SQLITE3_CFLAGS="-std=gnu99 -DSQLITE_ENABLE_RTREE -DSQLITE_THREADSAFE=1 -DHAVE_USLEEP=1 -DSQLITE_ENABLE_FTS3 \
 -DSQLITE_ENABLE_FTS3_PARENTHESIS -DSQLITE_TRACE_SIZE_LIMIT=15 -DSQLITE_OMIT_DEPRECATED -DSQLITE_DEFAULT_WAL_SYNCHRONOUS=1 \
 -DSQLITE_ENABLE_UPDATE_DELETE_LIMIT -Wno-deprecated-declarations"
# /work/main/Makefile: CGO_CFLAGS := -O2 $(SQLITE_CFLAGS) $(SQLITE_TUNING)
SQLITE_CFLAGS="-DSQLITE_DQS=0 -DSQLITE_DEFAULT_MEMSTATUS=0 -DSQLITE_DEFAULT_WAL_SYNCHRONOUS=1 \
 -DSQLITE_LIKE_DOESNT_MATCH_BLOBS -DSQLITE_MAX_EXPR_DEPTH=0 -DSQLITE_OMIT_DEPRECATED \
 -DSQLITE_OMIT_PROGRESS_CALLBACK -DSQLITE_OMIT_SHARED_CACHE -DSQLITE_USE_ALLOCA -DSQLITE_STRICT_SUBTYPE=1"
SQLITE_TUNING="-DSQLITE_DEFAULT_PCACHE_INITSZ=512 -DSQLITE_ENABLE_QPSG -DSQLITE_DEFAULT_FILE_PERMISSIONS=0660"
CC=${CC:-gcc}
set -x
nice -n 19 $CC -c -fPIC -m64 -pthread -O2 $SQLITE_CFLAGS $SQLITE_TUNING $GO_SQLITE3_CFLAGS \
  -o "$OUT/sqlite3.o" "$SRC/sqlite3-binding.c"
rm -f "$OUT/libsqlite3.a"
ar rcs "$OUT/libsqlite3.a" "$OUT/sqlite3.o"
cp "$SRC/sqlite3-binding.h" "$OUT/sqlite3.h"
