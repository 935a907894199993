#!/bin/sh
# Builds loremnews-rs: first the static SQLite library from the Go binary's
# amalgamation and flags (build-sqlite.sh), then the server, linked against
# it (libsqlite3-sys without its bundled SQLite). Gentle on a shared
# machine: nice 19, one job.
# Output: $TARGET/release/loremnews-rs (TARGET: $CARGO_TARGET_DIR or ./target).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
TARGET=${CARGO_TARGET_DIR:-$here/target}
LIB=$TARGET/sqlite-lib
cd "$here"
if [ ! -f "$LIB/libsqlite3.a" ] || [ "$here/build-sqlite.sh" -nt "$LIB/libsqlite3.a" ]; then
  "$here/build-sqlite.sh" "$LIB"
  # rustc copies a static native library into libsqlite3-sys's rlib, and
  # cargo does not watch the file: build that crate again.
  CARGO_TARGET_DIR=$TARGET cargo clean --release -p libsqlite3-sys
fi
# SQLITE3_NO_PKG_CONFIG: else libsqlite3-sys asks pkg-config first, which finds the system library.
SQLITE3_LIB_DIR=$LIB SQLITE3_INCLUDE_DIR=$LIB SQLITE3_STATIC=1 SQLITE3_NO_PKG_CONFIG=1 CARGO_TARGET_DIR=$TARGET \
  nice -n 19 cargo build --release -j 1
echo "built $TARGET/release/loremnews-rs"
