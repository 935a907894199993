#!/bin/bash
# compare-pages.sh: serves the same database from the Go app (bin/loremnews
# serve --benchmarking) and from loremnews-rs, fetches the same pages from
# both and compares them byte for byte; then sends a few hundred of each
# write action to each, one request at a time, and checks both databases.
#
# usage: benchmarks/rust-axum/compare-pages.sh [--db SEEDED.sqlite3] [--writes N] [--keep]
#   --db PATH    a database seeded by the Go app (default: a fresh one,
#                bin/loremnews seed, 100 users and 1,000 posts)
#   --writes N   POSTs of each write action to each server (default 300)
#   --keep       keep the work folder (databases, logs, differences)
# env: GO_BIN (default bin/loremnews), RS_BIN (default
# benchmarks/rust-axum/target/release/loremnews-rs, or
# $CARGO_TARGET_DIR/release/loremnews-rs), WORK (default a new folder in /tmp),
# GO_PORT (3211), RS_PORT (3212).
# Needs python3 (standard library only).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
GO_BIN=${GO_BIN:-$root/bin/loremnews}
RS_BIN=${RS_BIN:-${CARGO_TARGET_DIR:-$here/target}/release/loremnews-rs}
GO_PORT=${GO_PORT:-3211}
RS_PORT=${RS_PORT:-3212}
SEED_DB=""
WRITES=300
KEEP=0
while [ $# -gt 0 ]; do
  case $1 in
    --db) SEED_DB=$2; shift 2 ;;
    --writes) WRITES=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    *) echo "usage: $0 [--db SEEDED.sqlite3] [--writes N] [--keep]" >&2; exit 2 ;;
  esac
done
[ -x "$GO_BIN" ] || { echo "no Go binary at $GO_BIN" >&2; exit 1; }
[ -x "$RS_BIN" ] || { echo "no loremnews-rs at $RS_BIN (run $here/build.sh)" >&2; exit 1; }
WORK=${WORK:-$(mktemp -d /tmp/rustcmp-compare.XXXXXX)}
mkdir -p "$WORK"
GO_PID=""; RS_PID=""
stop() {
  [ -n "$GO_PID" ] && kill "$GO_PID" 2>/dev/null && wait "$GO_PID" 2>/dev/null || true
  [ -n "$RS_PID" ] && kill "$RS_PID" 2>/dev/null && wait "$RS_PID" 2>/dev/null || true
  GO_PID=""; RS_PID=""
}
cleanup() { stop; [ "$KEEP" = 1 ] || rm -rf "$WORK"; }
trap cleanup EXIT INT TERM

copy_db() { # src dst: the file and its WAL, with no server on it
  cp "$1" "$2"
  [ -f "$1-wal" ] && cp "$1-wal" "$2-wal" || true
}

start() { # db1 db2: the Go app on db1, loremnews-rs on db2, each until it answers
  "$GO_BIN" serve --db "$1" --benchmarking --addr "127.0.0.1:$GO_PORT" --metrics=false >>"$WORK/go.log" 2>&1 &
  GO_PID=$!
  "$RS_BIN" --db "$2" --addr "127.0.0.1:$RS_PORT" >>"$WORK/rs.log" 2>&1 &
  RS_PID=$!
  for port in "$GO_PORT" "$RS_PORT"; do
    for _ in $(seq 100); do
      curl -s -o /dev/null -X POST "http://127.0.0.1:$port/benchmarking/ceiling" && break
      sleep 0.1
    done
  done
}

echo "work folder: $WORK"
# 1. The pages of a seeded database.
if [ -n "$SEED_DB" ]; then
  copy_db "$SEED_DB" "$WORK/seed.sqlite3"
else
  "$GO_BIN" seed --db "$WORK/seed.sqlite3" --quiet
fi
copy_db "$WORK/seed.sqlite3" "$WORK/go.sqlite3"
copy_db "$WORK/seed.sqlite3" "$WORK/rs.sqlite3"
start "$WORK/go.sqlite3" "$WORK/rs.sqlite3"
grep -h "listening" "$WORK/go.log" "$WORK/rs.log" || true
status=0
python3 "$here/compare.py" pages "$WORK/seed.sqlite3" "$GO_PORT" "$RS_PORT" "$WORK/diffs" || status=1

# 2. Every benchmarking action where its answer does not depend on chance:
# a database of one user and one post, where every pick has one choice.
stop
"$GO_BIN" seed --db "$WORK/tiny.sqlite3" --users 1 --posts 1 --quiet
copy_db "$WORK/tiny.sqlite3" "$WORK/go-tiny.sqlite3"
copy_db "$WORK/tiny.sqlite3" "$WORK/rs-tiny.sqlite3"
start "$WORK/go-tiny.sqlite3" "$WORK/rs-tiny.sqlite3"
python3 "$here/compare.py" actions "$WORK/tiny.sqlite3" "$GO_PORT" "$RS_PORT" "$WORK/diffs" || status=1

# 3. Writes: N of each write action, and of each mix, to each server, one
# request at a time; then the servers stop and both files are checked.
stop
start "$WORK/go.sqlite3" "$WORK/rs.sqlite3"
python3 "$here/compare.py" writes "$WORK/seed.sqlite3" "$GO_PORT" "$RS_PORT" "$WORK/diffs" "$WRITES" || status=1
stop
python3 "$here/compare.py" check "$WORK/go.sqlite3" "$WORK/rs.sqlite3" || status=1
[ -s "$WORK/rs.log" ] && grep -v listening "$WORK/rs.log" | head -5 || true
[ -d "$WORK/diffs" ] && echo "differences saved in $WORK/diffs (kept with --keep)"
exit $status
