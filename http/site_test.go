package http_test

import (
	"cmp"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/bench/setups"
	lnhttp "github.com/loremnews/loremnews/http"
	"github.com/loremnews/loremnews/pgcluster/pgtest"
	"github.com/loremnews/loremnews/postgres"
	"github.com/loremnews/loremnews/seed"
	"github.com/loremnews/loremnews/sqlite"
)

// backend names a database the suite runs on.
type backend string

const (
	sqliteBackend   backend = "sqlite"
	postgresBackend backend = "postgres"
)

// backends are the databases the suite runs on: those named in
// $LOREM_TEST_BACKENDS, by default both, so the whole HTTP suite passes on
// each. Without PostgreSQL its subtests skip (see pgtest).
func backends(t *testing.T) []backend {
	t.Helper()
	var out []backend
	for _, name := range strings.Split(cmp.Or(os.Getenv("LOREM_TEST_BACKENDS"), "sqlite,postgres"), ",") {
		switch be := backend(strings.TrimSpace(name)); be {
		case sqliteBackend, postgresBackend:
			out = append(out, be)
		default:
			t.Fatalf("LOREM_TEST_BACKENDS: unknown backend %q (want sqlite, postgres, or both separated by a comma)", name)
		}
	}
	return out
}

// forEachBackend runs test once on each backend, as a subtest named after
// it: `go test -run 'TestPosts/sqlite'` runs one.
func forEachBackend(t *testing.T, test func(t *testing.T, be backend)) {
	t.Helper()
	for _, be := range backends(t) {
		t.Run(string(be), func(t *testing.T) { test(t, be) })
	}
}

func TestMain(m *testing.M) { pgtest.Main(m) }

// testSite is a real store behind the real handler on a loopback port.
type testSite struct {
	t   testing.TB
	db  loremnews.Database
	ds  *seed.Dataset
	srv *httptest.Server
	// be, dsn and opt are how it was made, so another process's store
	// and handler can be made on the same database (sibling).
	be  backend
	dsn string
	opt siteOptions
}

type siteOptions struct {
	profile      string // the SQLite setup (package setups); ignored on PostgreSQL
	benchmarking bool
	users, posts int
	// writerTimeout bounds a write's wait for its turn; 0 keeps the
	// store's default.
	writerTimeout time.Duration
	handler       lnhttp.Config // merged over the defaults below
	// sessions are loaded with the seed data, times and all.
	sessions []*loremnews.Session
	// now, if set, anchors the seed's times and stops the handler's
	// clock there, so a page renders the same bytes every run.
	now time.Time
}

// newTestSite opens a fresh database, seeds it (bcrypt cost 4: fast) and
// serves it until the test ends; the handler hashes at cost 4 too unless
// opt.handler says otherwise.
func newTestSite(t testing.TB, be backend, opt siteOptions) *testSite {
	t.Helper()
	if opt.users == 0 {
		opt.users, opt.posts = 10, 20
	}
	var dsn string
	if be == postgresBackend {
		dsn = pgtest.NewDatabase(t)
	} else {
		dsn = filepath.Join(t.TempDir(), "site.sqlite3")
	}
	db := openStore(t, be, dsn, opt)
	ds, err := seed.Generate(seed.Config{Users: opt.users, Posts: opt.posts, Seed: 3, BcryptCost: 4, Now: opt.now})
	if err != nil {
		t.Fatal(err)
	}
	ds.Sessions = append(ds.Sessions, opt.sessions...)
	if err := db.ImportDataset(context.Background(), ds); err != nil {
		t.Fatal(err)
	}
	return &testSite{t: t, db: db, ds: ds, srv: serveStore(t, db, opt), be: be, dsn: dsn, opt: opt}
}

// openStore opens the database at dsn (a file, or a PostgreSQL URL),
// closing it when the test ends.
func openStore(t testing.TB, be backend, dsn string, opt siteOptions) loremnews.Database {
	t.Helper()
	var (
		db  loremnews.Database
		err error
	)
	if be == postgresBackend {
		db, err = postgres.Open(context.Background(), postgres.Config{URL: dsn, WriterTimeout: opt.writerTimeout})
	} else {
		db, err = setups.Open(context.Background(), opt.profile, sqlite.Config{DSN: dsn, WriterTimeout: opt.writerTimeout})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// serveStore serves db through a new handler (opt.handler over the
// defaults below) on a loopback port until the test ends.
func serveStore(t testing.TB, db loremnews.Database, opt siteOptions) *httptest.Server {
	t.Helper()
	cfg := opt.handler
	if cfg.BcryptCost == 0 {
		cfg.BcryptCost = 4 // the seed's cost
	}
	if opt.benchmarking {
		cfg.Benchmark = db.Benchmark()
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = 64 << 10
	}
	h, err := lnhttp.NewHandler(db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !opt.now.IsZero() {
		lnhttp.SetClock(h, func() time.Time { return opt.now })
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// sibling is another process serving the site's database: a store of its
// own opened on the same file or URL, and a handler of its own on it
// (with the site's options). Its browsers see the same data set.
func (s *testSite) sibling() *testSite {
	s.t.Helper()
	db := openStore(s.t, s.be, s.dsn, s.opt)
	return &testSite{t: s.t, db: db, ds: s.ds, srv: serveStore(s.t, db, s.opt), be: s.be, dsn: s.dsn, opt: s.opt}
}

// browser is one visitor: a cookie jar and no automatic redirects, so
// tests see each 303.
type browser struct {
	t      testing.TB
	site   *testSite
	client *http.Client
	// forwardedFor, if set, is sent as X-Forwarded-For: the client
	// address a trusted proxy would report.
	forwardedFor string
}

func (s *testSite) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: s.t, site: s, client: &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

type response struct {
	status int
	header http.Header
	body   string
}

func (r *response) location() string { return r.header.Get("Location") }

func (b *browser) do(req *http.Request) *response {
	b.t.Helper()
	if b.forwardedFor != "" {
		req.Header.Set("X-Forwarded-For", b.forwardedFor)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

func (b *browser) get(path string) *response {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.site.srv.URL+path, nil)
	return b.do(req)
}

var csrfRe = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// csrf loads a page and returns the form token in it.
func (b *browser) csrf() string {
	b.t.Helper()
	r := b.get("/signin")
	m := csrfRe.FindStringSubmatch(r.body)
	if m == nil {
		b.t.Fatal("no CSRF token on the sign-in page")
	}
	return m[1]
}

// post submits a form with a valid CSRF token.
func (b *browser) post(path string, form url.Values) *response {
	b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf_token", b.csrf())
	return b.postRaw(path, form)
}

// postRaw submits a form as given.
func (b *browser) postRaw(path string, form url.Values) *response {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.site.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

// cookie returns the value of the browser's cookie name, or "".
func (b *browser) cookie(name string) string {
	u, _ := url.Parse(b.site.srv.URL)
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// signIn signs in as the seeded user with index i.
func (b *browser) signIn(i int) {
	b.t.Helper()
	r := b.post("/signin", url.Values{"screen_name": {b.site.ds.Users[i].ScreenName}, "password": {seed.Password}})
	if r.status != http.StatusSeeOther {
		b.t.Fatalf("sign in: status %d\n%s", r.status, r.body)
	}
}

func wantStatus(t testing.TB, r *response, want int) {
	t.Helper()
	if r.status != want {
		t.Fatalf("status %d, want %d\n%.2000s", r.status, want, r.body)
	}
}

func wantBody(t testing.TB, r *response, substrings ...string) {
	t.Helper()
	for _, s := range substrings {
		if !strings.Contains(r.body, s) {
			t.Fatalf("body lacks %q\n%.3000s", s, r.body)
		}
	}
}

func wantRedirect(t testing.TB, r *response, prefix string) {
	t.Helper()
	if r.status != http.StatusSeeOther || !strings.HasPrefix(r.location(), prefix) {
		t.Fatalf("got %d → %q, want 303 → %s…\n%.1000s", r.status, r.location(), prefix, r.body)
	}
}
