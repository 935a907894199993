# Lorem News. `make run` builds, migrates, seeds (when empty) and serves on
# http://127.0.0.1:3000; `make test` runs every test. See README.md.

# SQLite's recommended compile-time options (https://sqlite.org/compile.html),
# minus the ones go-sqlite3 cannot use: THREADSAFE=0 (the driver refuses a
# single-threaded library; we open connections with _mutex=no instead, the
# runtime equivalent for database/sql's one-goroutine-per-connection use),
# OMIT_DECLTYPE (the driver reads declared types to return time.Time) and
# OMIT_AUTOINIT. Confirm with: bin/loremnews version (PRAGMA compile_options).
SQLITE_CFLAGS := -DSQLITE_DQS=0 -DSQLITE_DEFAULT_MEMSTATUS=0 -DSQLITE_DEFAULT_WAL_SYNCHRONOUS=1 \
	-DSQLITE_LIKE_DOESNT_MATCH_BLOBS -DSQLITE_MAX_EXPR_DEPTH=0 -DSQLITE_OMIT_DEPRECATED \
	-DSQLITE_OMIT_PROGRESS_CALLBACK -DSQLITE_OMIT_SHARED_CACHE -DSQLITE_USE_ALLOCA -DSQLITE_STRICT_SUBTYPE=1
# Tuning, in both builds (it is not one of SQLite's recommended options):
# each connection's page cache takes its first 512 pages (2 MiB) in one
# allocation that it keeps. A read connection empties its cache whenever
# another connection has committed since its last read — here, at nearly
# every read — and with SQLite's default of 20 pages every refill goes back
# to malloc, which has returned the memory to the kernel, so every refill
# page-faults. It costs those 2 MiB per connection; what it gained is
# measured in benchmarks/perf/README.md (the page-cache attempt, 16).
#
# And the query planner stability guarantee (ENABLE_QPSG): without it,
# SQLite marks a statement whose plan may depend on a bound value (every
# "LIMIT ?") to be compiled again whenever its bindings are cleared, which
# the driver's statement cache does each time it takes a statement back, so
# those statements were parsed and planned again on every use. Our plans do
# not depend on the values bound.
#
# And the mode of the files SQLite creates (the database, its -wal and
# -shm): 0660 less the umask instead of 0644, so that under the deployment
# kit's UMask=0007 another user of the site's group (Litestream's) can take
# part in SQLite's locking; under the usual umask 0022 they are 0640.
SQLITE_TUNING := -DSQLITE_DEFAULT_PCACHE_INITSZ=512 -DSQLITE_ENABLE_QPSG -DSQLITE_DEFAULT_FILE_PERMISSIONS=0660
export CGO_ENABLED := 1
export CGO_CFLAGS := -O2 $(SQLITE_CFLAGS) $(SQLITE_TUNING)

GO ?= go
# The app, the SQLite package, its Prometheus collector and its failing-disk
# file system (faultfs): four modules (go test ./... stops at a nested one).
MODULES := . sqlitedb sqlitedb/sqlitedbprom sqlitedb/faultfs
# make run DB=… ADDR=… passes --db and --addr; left unset, serve reads
# LOREM_DB and LOREM_ADDR from the environment, else its defaults
# (storage/loremnews.sqlite3, 127.0.0.1:3000), so LOREM_ADDR=… make run works.
DB ?=
ADDR ?=

.PHONY: bench-workers build build-plain check generate run test test-deps lint vulncheck audit bench bench-postgres bench-quick pgo clean

# The build's name, which `loremnews version` and /metrics give: the
# commit (+modified for a work tree with changes) and, on a release, its
# vX.Y.Z tag.
BUILD_COMMIT := $(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo +modified)
BUILD_VERSION := $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null)
BUILD_FLAGS := -ldflags "-X main.buildCommit=$(BUILD_COMMIT) -X main.buildVersion=$(BUILD_VERSION)"

build:
	$(GO) build $(BUILD_FLAGS) -o bin/loremnews ./cmd/loremnews

# The same binary without the compile-time options, for the experiment.
build-plain:
	CGO_CFLAGS="-O2 $(SQLITE_TUNING)" $(GO) build -o bin/loremnews-plain ./cmd/loremnews

run: build
	bin/loremnews serve$(if $(DB), --db $(DB))$(if $(ADDR), --addr $(ADDR)) --seed-if-empty --benchmarking

test-deps:
	scripts/install-test-deps

# The pages are templ components (http/views.templ) compiled to Go; the
# generated http/views_templ.go is committed so a plain go build works.
generate:
	$(GO) tool templ generate -path http

lint: test-deps
	@$(GO) tool templ generate -path http >/dev/null 2>&1; git diff --exit-code --stat -- http/views_templ.go || (echo "http/views_templ.go is stale: run make generate and commit it"; exit 1)
	@test -z "$$(gofmt -l .)" || (gofmt -l .; echo "gofmt needed on the files above"; exit 1)
	@for m in $(MODULES); do echo "go vet, staticcheck: $$m"; (cd $$m && $(GO) vet ./... && $(CURDIR)/bin/tools/staticcheck ./...) || exit 1; done

# Every test of every module, with the race detector. The browser test saves
# its screenshot in test-artifacts/. LOREM_REQUIRE_ALL=1 (SQLITEDB_REQUIRE_ALL=1
# in the package's module) turns a test that would skip for want of
# PostgreSQL, Chromium, Litestream, the sqlite3 shell, Python or gcc -m32
# into a failure: test-deps installs them, so here (and in CI) nothing
# passes by skipping.
test: test-deps lint
	@for m in $(MODULES); do echo "go test: $$m"; \
		(cd $$m && LOREM_REQUIRE_ALL=1 SQLITEDB_REQUIRE_ALL=1 SQLITEDB_LITESTREAM=$(CURDIR)/bin/tools/litestream \
			LOREM_TEST_ARTIFACTS=$(CURDIR)/test-artifacts $(GO) test -race -count=1 -timeout 30m ./...) || exit 1; done

# The inner loop: gofmt, vet and staticcheck of every module (as lint, without
# installing the test tools or regenerating the pages), then go test -short
# (the long load and process tests skip) without the race detector: a few
# minutes where make test takes ten to twenty. make test is the whole proof.
check:
	@test -z "$$(gofmt -l .)" || (gofmt -l .; echo "gofmt needed on the files above"; exit 1)
	@for m in $(MODULES); do echo "go vet: $$m"; (cd $$m && $(GO) vet ./...) || exit 1; done
	@if [ -x bin/tools/staticcheck ]; then for m in $(MODULES); do (cd $$m && $(CURDIR)/bin/tools/staticcheck ./...) || exit 1; done; \
	else echo "staticcheck: not installed yet (make test-deps); skipped here, make lint runs it"; fi
	@for m in $(MODULES); do echo "go test -short: $$m"; (cd $$m && $(GO) test -short -count=1 ./...) || exit 1; done

# Known vulnerabilities in the code and the dependencies it calls, by
# govulncheck (pinned). It downloads the Go vulnerability database each run,
# so it needs the internet (or VULNDB=URL of a mirror); when the database
# cannot be reached it says so and fails, having checked nothing.
GOVULNCHECK_VERSION := v1.9.0
VULNDB ?=
vulncheck:
	@out=$$($(GO) run golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK_VERSION) $(if $(VULNDB),-db $(VULNDB)) ./... 2>&1); rc=$$?; \
	echo "$$out"; \
	if [ $$rc -ne 0 ] && echo "$$out" | grep -q "fetching vulnerabilities"; then \
		echo "make vulncheck: the Go vulnerability database cannot be reached from this machine, so NOTHING WAS CHECKED."; \
		echo "  Run it where the internet is reachable, or give a mirror: make vulncheck VULNDB=https://… or VULNDB=file:///path"; \
	elif [ $$rc -ne 0 ] && ! echo "$$out" | grep -q "^Vulnerability #"; then \
		echo "make vulncheck: govulncheck $(GOVULNCHECK_VERSION) did not run (see above); nothing was checked."; \
	fi; exit $$rc

# Lighthouse (SEO, best practices, accessibility), axe and the Nu HTML
# checker against a seeded site: the front page, a post and a signed-in
# user's own page. Needs Node, Java and Chromium; installs the pinned npm
# tools into bin/audit. About a minute; not part of make test.
audit:
	scripts/audit

# The full experiment (about 15 minutes): every setup, plus split on a binary
# without the compile-time options, three 10 s runs each at c=20, then a
# concurrency sweep 1…256, taking turns (--interleave), then balanced and
# write_heavy at c=256, then the trivial read (point_read) against the ceiling
# at c=1, 5 and 10. Reports and their SVG charts land in benchmarks/DATE-balanced/
# (-2, -3, … if taken).
bench: build build-plain
	bin/loremnews bench --plain-binary bin/loremnews-plain --sweep --interleave --scenarios balanced@256,write_heavy@256 --point-read 1,5,10 --workers 1,4

# The talk's deployment: its baselines and split served by 1, 4 and 10
# processes on one file (serve --workers), split's writers also polling for
# the lock instead of taking turns, balanced at c=20 and c=256. About 5 minutes.
bench-workers: build
	bin/loremnews bench --setups naive,enhanced,split --workers 1,4,10 --poll-too --interleave --scenarios balanced@256

# SQLite's default setup and PostgreSQL (durable commits, and synchronous_commit=off) side by side: balanced at
# c=20 (three runs) and c=256, write_heavy at c=20 and c=256, and the sweep,
# taking turns. PostgreSQL runs on a throw-away cluster tuned for the machine
# (pgcluster.Tuned), unless LOREM_BENCH_POSTGRES names a server. About 6 minutes.
# Reports land in benchmarks/DATE-sqlite-vs-postgres/ (-2, -3, … if taken).
bench-postgres: build
	out=benchmarks/$$(date +%F)-sqlite-vs-postgres; n=2; \
	while [ -e "$$out" ]; do out=benchmarks/$$(date +%F)-sqlite-vs-postgres-$$n; n=$$((n+1)); done; \
	bin/loremnews bench --targets sqlite,postgres,postgres-async --sweep --interleave \
		--scenarios balanced@256,write_heavy@20,write_heavy@256 --out "$$out"

# A short look (about 2 minutes with the build): every setup, 3 runs of 3 s,
# no sweep. Its report goes to benchmarks/quick/, which git ignores.
bench-quick: build build-plain
	bin/loremnews bench --plain-binary bin/loremnews-plain --quick --out benchmarks/quick

# Refresh the profile that profile-guided optimization builds with
# (cmd/loremnews/default.pgo, read by go build on its own): a balanced
# load on a fresh database, profiled for 20 s. Run after changing the hot
# path, then rebuild. About a minute.
pgo: build
	scripts/pgo-profile

clean:
	rm -rf bin
