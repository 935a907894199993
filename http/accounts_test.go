package http_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loremnews/loremnews"
	lnhttp "github.com/loremnews/loremnews/http"
	"github.com/loremnews/loremnews/seed"
	"golang.org/x/crypto/bcrypt"
)

// proxiedSite is a test site behind a trusted proxy on loopback, so each
// browser can claim its own client address (browser.forwardedFor).
func proxiedSite(t *testing.T, be backend, cfg lnhttp.Config) *testSite {
	t.Helper()
	proxies, _ := lnhttp.ParseTrustedProxies("127.0.0.0/8,::1")
	cfg.TrustedProxies = proxies
	return newTestSite(t, be, siteOptions{handler: cfg})
}

// lockAccount fails n sign-ins to name, each from a new address and a new
// browser, so only the account-wide limit counts them.
func lockAccount(t *testing.T, site *testSite, name string, n int) {
	t.Helper()
	for i := range n {
		b := site.browser()
		b.forwardedFor = fmt.Sprintf("203.0.113.%d", 100+i)
		b.post("/signin", url.Values{"screen_name": {name}, "password": {fmt.Sprint("guess-", i)}})
	}
}

// TestCurrentPasswordGuessesCountPerAccount: wrong current passwords sent
// with a stolen session (and its browser's device cookie) from 10
// addresses, 5 each, are judged no further than the device cookie's own
// limit (5) and then the account-wide limit of failed sign-ins (20), as
// sign-ins are.
func TestCurrentPasswordGuessesCountPerAccount(t *testing.T) {
	forEachBackend(t, testCurrentPasswordGuessesCountPerAccount)
}

func testCurrentPasswordGuessesCountPerAccount(t *testing.T, be backend) {
	site := proxiedSite(t, be, lnhttp.Config{})
	thief := site.browser()
	thief.signIn(0)
	path := fmt.Sprintf("/users/%d/delete", site.ds.Users[0].ID)
	counts := map[int]int{}
	for a := range 10 {
		thief.forwardedFor = fmt.Sprintf("198.51.100.%d", a+1)
		for i := range 5 {
			counts[thief.post(path, url.Values{"current_password": {fmt.Sprint("guess-", a, "-", i)}}).status]++
		}
	}
	if counts[http.StatusUnprocessableEntity] != 25 || counts[http.StatusTooManyRequests] != 25 {
		t.Fatalf("statuses %v: want 25 guesses judged (422: 5 on the device cookie, 20 on the account) and 25 refused (429)", counts)
	}
	// Sign-ins from new browsers are refused too: the account is at its limit.
	newcomer := site.browser()
	newcomer.forwardedFor = "192.0.2.1"
	r := newcomer.post("/signin", url.Values{"screen_name": {site.ds.Users[0].ScreenName}, "password": {seed.Password}})
	wantStatus(t, r, http.StatusTooManyRequests)
}

// TestTooManyNamesTheLimit: each 429 of sign-in says which limit refused
// and what would help.
func TestTooManyNamesTheLimit(t *testing.T) { forEachBackend(t, testTooManyNamesTheLimit) }

func testTooManyNamesTheLimit(t *testing.T, be backend) {
	site := proxiedSite(t, be, lnhttp.Config{SignInFailures: 2, SignInFailuresPerIP: 4, SignInFailuresPerAccount: 3})
	users := site.ds.Users

	// One address, one account: 2 wrong passwords.
	b := site.browser()
	b.forwardedFor = "198.51.100.1"
	for range 2 {
		b.post("/signin", url.Values{"screen_name": {users[0].ScreenName}, "password": {"wrong-password"}})
	}
	r := b.post("/signin", url.Values{"screen_name": {users[0].ScreenName}, "password": {seed.Password}})
	wantStatus(t, r, http.StatusTooManyRequests)
	wantBody(t, r, "Too many wrong passwords for this account from your address. Try again in 15 minutes.")

	// One address, any account: 4 failures.
	for i := 1; i <= 2; i++ {
		b.post("/signin", url.Values{"screen_name": {users[i].ScreenName}, "password": {"wrong-password"}})
	}
	r = b.post("/signin", url.Values{"screen_name": {users[5].ScreenName}, "password": {seed.Password}})
	wantStatus(t, r, http.StatusTooManyRequests)
	wantBody(t, r, "Too many failed sign-ins from your address, to any account. Try again in 15 minutes.")

	// One account, many addresses: 3 failures from browsers it never saw.
	lockAccount(t, site, users[6].ScreenName, 3)
	stranger := site.browser()
	stranger.forwardedFor = "192.0.2.9"
	r = stranger.post("/signin", url.Values{"screen_name": {users[6].ScreenName}, "password": {seed.Password}})
	wantStatus(t, r, http.StatusTooManyRequests)
	wantBody(t, r, "Too many failed sign-ins to this account from browsers it has not signed in with. Try again in 15 minutes, or from a browser you have signed in with before.")
}

// TestSignUpBrowserIsKnown: the browser that created an account holds its
// device cookie, so others' failed sign-ins do not lock its owner out of it.
func TestSignUpBrowserIsKnown(t *testing.T) { forEachBackend(t, testSignUpBrowserIsKnown) }

func testSignUpBrowserIsKnown(t *testing.T, be backend) {
	site := proxiedSite(t, be, lnhttp.Config{SignInFailuresPerAccount: 3})
	owner := site.browser()
	owner.forwardedFor = "198.51.100.1"
	wantRedirect(t, owner.post("/signup", url.Values{"screen_name": {"fresh_owner"}, "password": {"long enough"}}), "/")
	if owner.cookie("lorem_device") == "" {
		t.Fatal("sign-up set no device cookie")
	}
	wantRedirect(t, owner.post("/signout", nil), "/")
	lockAccount(t, site, "fresh_owner", 3)
	wantRedirect(t, owner.post("/signin", url.Values{"screen_name": {"fresh_owner"}, "password": {"long enough"}}), "/")
}

// TestDeviceCookieBelongsToTheAccount: a device cookie names the account
// by id and is bound to its password. After a rename, whoever takes the
// old name is not known to the old browser; after a new password, no
// browser is known; a rename alone keeps the browser known.
func TestDeviceCookieBelongsToTheAccount(t *testing.T) {
	forEachBackend(t, testDeviceCookieBelongsToTheAccount)
}

func testDeviceCookieBelongsToTheAccount(t *testing.T, be backend) {
	site := proxiedSite(t, be, lnhttp.Config{SignInFailuresPerAccount: 3})
	ctx := context.Background()
	users := site.ds.Users
	signInOut := func(b *browser, name, password string) {
		t.Helper()
		wantRedirect(t, b.post("/signin", url.Values{"screen_name": {name}, "password": {password}}), "/")
		wantRedirect(t, b.post("/signout", nil), "/")
	}
	newBrowser := func(addr string) *browser {
		b := site.browser()
		b.forwardedFor = addr
		return b
	}

	t.Run("RenamedNameTakenByAnother", func(t *testing.T) {
		old := newBrowser("198.51.100.1")
		name := users[0].ScreenName
		signInOut(old, name, seed.Password)
		old.signIn(0)
		wantRedirect(t, old.post(fmt.Sprintf("/users/%d", users[0].ID), url.Values{"screen_name": {"moved_away"}, "about": {""}, "current_password": {seed.Password}}), "/users/")
		wantRedirect(t, old.post("/signout", nil), "/")
		// Someone else signs up with the freed name. Even with the right
		// password, the old browser is a stranger to the new account.
		wantRedirect(t, newBrowser("198.51.100.2").post("/signup", url.Values{"screen_name": {name}, "password": {"taker's password"}}), "/")
		lockAccount(t, site, name, 3)
		wantStatus(t, old.post("/signin", url.Values{"screen_name": {name}, "password": {"taker's password"}}), http.StatusTooManyRequests)
	})
	t.Run("RenameKeepsTheBrowserKnown", func(t *testing.T) {
		laptop := newBrowser("198.51.100.3")
		signInOut(laptop, users[1].ScreenName, seed.Password)
		if _, err := site.db.UpdateProfile(ctx, users[1].ID, loremnews.ProfileChange{ScreenName: "new_name_1"}); err != nil {
			t.Fatal(err)
		}
		lockAccount(t, site, "new_name_1", 3)
		wantRedirect(t, laptop.post("/signin", url.Values{"screen_name": {"new_name_1"}, "password": {seed.Password}}), "/")
	})
	t.Run("NewPasswordForgetsBrowsers", func(t *testing.T) {
		laptop := newBrowser("198.51.100.4")
		signInOut(laptop, users[2].ScreenName, seed.Password)
		digest, _ := bcrypt.GenerateFromPassword([]byte("a new password"), 4)
		if _, err := site.db.UpdateProfile(ctx, users[2].ID, loremnews.ProfileChange{ScreenName: users[2].ScreenName, About: users[2].About, PasswordDigest: string(digest)}); err != nil {
			t.Fatal(err)
		}
		lockAccount(t, site, users[2].ScreenName, 3)
		wantStatus(t, laptop.post("/signin", url.Values{"screen_name": {users[2].ScreenName}, "password": {"a new password"}}), http.StatusTooManyRequests)
	})
	t.Run("SavingTheProfileKeepsThisBrowserKnown", func(t *testing.T) {
		// An About-only save, then a rename, from the browser: its device
		// cookie must still match the account's unchanged password.
		laptop := newBrowser("198.51.100.6")
		laptop.signIn(4)
		path := fmt.Sprintf("/users/%d", users[4].ID)
		wantRedirect(t, laptop.post(path, url.Values{"screen_name": {users[4].ScreenName}, "about": {"Only the about text changes."}}), path)
		wantRedirect(t, laptop.post(path, url.Values{"screen_name": {"renamed_4"}, "about": {""}, "current_password": {seed.Password}}), path)
		wantRedirect(t, laptop.post("/signout", nil), "/")
		lockAccount(t, site, "renamed_4", 3)
		wantRedirect(t, laptop.post("/signin", url.Values{"screen_name": {"renamed_4"}, "password": {seed.Password}}), "/")
	})
	t.Run("ChangingThePasswordHereKeepsThisBrowserKnown", func(t *testing.T) {
		laptop := newBrowser("198.51.100.5")
		laptop.signIn(3)
		path := fmt.Sprintf("/users/%d", users[3].ID)
		wantRedirect(t, laptop.post(path, url.Values{"screen_name": {users[3].ScreenName}, "password": {"another password"}, "current_password": {seed.Password}}), path)
		wantRedirect(t, laptop.post("/signout", nil), "/")
		lockAccount(t, site, users[3].ScreenName, 3)
		wantRedirect(t, laptop.post("/signin", url.Values{"screen_name": {users[3].ScreenName}, "password": {"another password"}}), "/")
	})
}

// TestSignInRehashesAtTheConfiguredCost: a password stored at another
// bcrypt cost is stored again at --bcrypt-cost when its owner signs in,
// and until then a wrong password for that account takes about as long as
// one for a name that does not exist.
func TestSignInRehashesAtTheConfiguredCost(t *testing.T) {
	forEachBackend(t, testSignInRehashesAtTheConfiguredCost)
}

func testSignInRehashesAtTheConfiguredCost(t *testing.T, be backend) {
	const cost = 9 // the seed's digests are cost 4: 32 times cheaper
	site := newTestSite(t, be, siteOptions{handler: lnhttp.Config{BcryptCost: cost, SignInFailures: 50, SignInFailuresPerIP: 50, SignInFailuresPerAccount: 50}})
	ctx := context.Background()
	known := site.ds.Users[1].ScreenName
	timeOf := func(name string) time.Duration {
		var took []time.Duration
		for range 3 {
			b := site.browser()
			start := time.Now()
			wantStatus(t, b.post("/signin", url.Values{"screen_name": {name}, "password": {"wrong-password"}}), http.StatusUnprocessableEntity)
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		return took[1]
	}
	unknown, old := timeOf("nobody_here"), timeOf(known)
	t.Logf("wrong password: unknown name %s, known name with a cost-4 digest %s", unknown, old)
	if old < unknown/2 {
		t.Errorf("a known name with an old digest answers in %s, an unknown one in %s: timing tells them apart", old, unknown)
	}

	site.browser().signIn(0)
	u, err := site.db.FindUserByID(ctx, site.ds.Users[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := bcrypt.Cost([]byte(u.PasswordDigest)); got != cost {
		t.Fatalf("after sign-in the digest has cost %d, want %d", got, cost)
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordDigest), []byte(seed.Password)) != nil {
		t.Fatal("the new digest is not of the password")
	}
	site.browser().signIn(0) // and the new digest signs in
	if u, err := site.db.FindUserByID(ctx, site.ds.Users[1].ID); err != nil || u.PasswordDigest != site.ds.Users[1].PasswordDigest {
		t.Fatalf("wrong passwords rehashed the digest (%v)", err)
	}
}

// TestLookalikeTitlesAreTaken: a title that only looks like another (here
// in full-width letters) is the same title, and a title with an invisible
// character or a stack of marks is refused.
func TestLookalikeTitlesAreTaken(t *testing.T) { forEachBackend(t, testLookalikeTitlesAreTaken) }

func testLookalikeTitlesAreTaken(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	b := site.browser()
	b.signIn(0)
	wantRedirect(t, b.post("/posts", url.Values{"title": {"Lookalike title"}}), "/posts/")
	for title, msg := range map[string]string{
		"Ｌｏｏｋａｌｉｋｅ title":                               "Title has already been taken.",
		"Lookalike\u2062 title":                         "Title contains invisible or text-direction characters.",
		"Lookalike title\U000E0041":                     "Title contains invisible or text-direction characters.",
		"L" + strings.Repeat("\u0300", 30) + "ookalike": "Title stacks too many accents or marks",
	} {
		r := b.post("/posts", url.Values{"title": {title}})
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantBody(t, r, msg)
	}
}

// TestContentLimitsPerAccount: one account may create 10 posts and 60
// comments an hour (the defaults); past that it gets 429 with the minutes
// to wait, while other accounts, and the benchmarking endpoints, which
// have no account, are not held back. A refused form (422) is not counted.
func TestContentLimitsPerAccount(t *testing.T) { forEachBackend(t, testContentLimitsPerAccount) }

func testContentLimitsPerAccount(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{benchmarking: true})
	b := site.browser()
	b.signIn(0)
	wantStatus(t, b.post("/posts", url.Values{"title": {"x"}}), http.StatusUnprocessableEntity)
	for i := range 10 {
		wantRedirect(t, b.post("/posts", url.Values{"title": {fmt.Sprint("Flood post ", i)}}), "/posts/")
	}
	r := b.post("/posts", url.Values{"title": {"One post too many"}})
	wantStatus(t, r, http.StatusTooManyRequests)
	wantBody(t, r, "You have written the most posts one account may in an hour (10). Try again in 60 minutes.")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}

	postPath := fmt.Sprintf("/posts/%d/comments", site.ds.Posts[0].ID)
	wantStatus(t, b.post(postPath, url.Values{"body": {"x"}}), http.StatusUnprocessableEntity)
	for i := range 60 {
		wantRedirect(t, b.post(postPath, url.Values{"body": {fmt.Sprint("Flood comment ", i)}}), "/posts/")
	}
	r = b.post(postPath, url.Values{"body": {"One comment too many"}})
	wantStatus(t, r, http.StatusTooManyRequests)
	wantBody(t, r, "You have written the most comments one account may in an hour (60). Try again in 60 minutes.")

	other := site.browser()
	other.signIn(1)
	wantRedirect(t, other.post("/posts", url.Values{"title": {"Another account posts"}}), "/posts/")
	wantRedirect(t, other.post(postPath, url.Values{"body": {"Another account comments"}}), "/posts/")
	for range 15 {
		req, _ := http.NewRequest(http.MethodPost, site.srv.URL+"/benchmarking/post_create", nil)
		wantRedirect(t, b.do(req), "/posts/")
	}
}

// TestSessionsPerAccountCapped: at most 50 browsers are signed in to one
// account; the 51st sign-in signs out the one that signed in first.
func TestSessionsPerAccountCapped(t *testing.T) { forEachBackend(t, testSessionsPerAccountCapped) }

func testSessionsPerAccountCapped(t *testing.T, be backend) {
	// 51 sign-ins to one account from new browsers: more password checks
	// than the default allows in a window.
	site := newTestSite(t, be, siteOptions{handler: lnhttp.Config{PasswordChecksPerAccount: 100}})
	var browsers []*browser
	for range 51 {
		b := site.browser()
		b.signIn(0)
		browsers = append(browsers, b)
	}
	sessions, err := site.db.UserSessions(context.Background(), site.ds.Users[0].ID, loremnews.SessionLimits{})
	if err != nil || len(sessions) != 50 {
		t.Fatalf("%d sessions (%v), want 50", len(sessions), err)
	}
	wantBody(t, browsers[0].get("/"), "Sign in")
	for _, b := range browsers[1:] {
		if r := b.get("/"); !strings.Contains(r.body, "Sign out") {
			t.Fatal("a browser other than the first was signed out")
		}
	}
}

// TestPasswordChecksAreLimited: every password check costs bcrypt's CPU,
// so checks are counted whatever their outcome: correct sign-ins to one
// account from browsers it does not know stop at the account's limit
// (while a browser it knows still signs in), and sign-ins from one
// address, to any accounts, stop at the address's.
func TestPasswordChecksAreLimited(t *testing.T) { forEachBackend(t, testPasswordChecksAreLimited) }

func testPasswordChecksAreLimited(t *testing.T, be backend) {
	site := proxiedSite(t, be, lnhttp.Config{PasswordChecksPerAccount: 5, PasswordChecksPerIP: 8})
	users := site.ds.Users
	owner := site.browser()
	owner.forwardedFor = "198.51.100.200"
	wantRedirect(t, owner.post("/signin", url.Values{"screen_name": {users[0].ScreenName}, "password": {seed.Password}}), "/")
	wantRedirect(t, owner.post("/signout", nil), "/")
	counts := map[int]int{}
	var refused *response
	for i := range 10 {
		b := site.browser()
		b.forwardedFor = fmt.Sprintf("203.0.113.%d", i+1)
		r := b.post("/signin", url.Values{"screen_name": {users[0].ScreenName}, "password": {seed.Password}})
		counts[r.status]++
		if r.status == http.StatusTooManyRequests {
			refused = r
		}
	}
	if counts[http.StatusSeeOther] != 4 || counts[http.StatusTooManyRequests] != 6 {
		t.Fatalf("statuses %v: want 4 correct sign-ins from new browsers (the owner's was the 5th check) and 6 refused", counts)
	}
	wantBody(t, refused, "Too many sign-ins to this account from browsers it has not signed in with.")
	// The owner's browser is known to the account: not held back.
	wantRedirect(t, owner.post("/signin", url.Values{"screen_name": {users[0].ScreenName}, "password": {seed.Password}}), "/")

	// One address, many accounts.
	b := site.browser()
	b.forwardedFor = "192.0.2.77"
	for i := range 8 {
		wantRedirect(t, b.post("/signin", url.Values{"screen_name": {users[i+1].ScreenName}, "password": {seed.Password}}), "/")
	}
	r := b.post("/signin", url.Values{"screen_name": {users[9].ScreenName}, "password": {seed.Password}})
	wantStatus(t, r, http.StatusTooManyRequests)
	wantBody(t, r, "Too many sign-ins from your address.")
}

// TestPostEditsPerAccount: one account may save 30 edits of its posts an
// hour (the default); the next gets 429 naming the limit. A refused edit
// (422) is not counted.
func TestPostEditsPerAccount(t *testing.T) { forEachBackend(t, testPostEditsPerAccount) }

func testPostEditsPerAccount(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	b := site.browser()
	b.signIn(0)
	r := b.post("/posts", url.Values{"title": {"A post to edit"}})
	wantRedirect(t, r, "/posts/")
	path := r.location()
	wantStatus(t, b.post(path, url.Values{"title": {"x"}}), http.StatusUnprocessableEntity)
	for i := range 30 {
		wantRedirect(t, b.post(path, url.Values{"title": {fmt.Sprint("Edited title ", i)}}), path)
	}
	r = b.post(path, url.Values{"title": {"One edit too many"}})
	wantStatus(t, r, http.StatusTooManyRequests)
	wantBody(t, r, "You have saved the most edits (posts, comments and profile) one account may in an hour (30). Try again in 60 minutes.")
}

// TestCommentAndProfileEditsCount: saving a comment's edit or the profile
// counts with post edits, 30 an hour together; the next save of either
// gets 429 naming the limit.
func TestCommentAndProfileEditsCount(t *testing.T) {
	forEachBackend(t, testCommentAndProfileEditsCount)
}

func testCommentAndProfileEditsCount(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	me := site.ds.Users[0]
	c, err := site.db.CreateComment(context.Background(), site.ds.Posts[0].ID, me.ID, loremnews.CommentInput{Body: "A comment to edit"})
	if err != nil {
		t.Fatal(err)
	}
	b := site.browser()
	b.signIn(0)
	commentPath := fmt.Sprintf("/comments/%d", c.ID)
	profilePath := fmt.Sprintf("/users/%d", me.ID)
	for i := range 30 {
		if i%2 == 0 {
			wantRedirect(t, b.post(commentPath, url.Values{"body": {fmt.Sprint("Edited comment ", i)}}), "/posts/")
		} else {
			wantRedirect(t, b.post(profilePath, url.Values{"screen_name": {me.ScreenName}, "about": {fmt.Sprint("About, saved ", i)}}), profilePath)
		}
	}
	for _, r := range []*response{
		b.post(commentPath, url.Values{"body": {"One edit too many"}}),
		b.post(profilePath, url.Values{"screen_name": {me.ScreenName}, "about": {"One save too many"}}),
	} {
		wantStatus(t, r, http.StatusTooManyRequests)
		wantBody(t, r, "You have saved the most edits (posts, comments and profile) one account may in an hour (30).")
	}
}

// TestDeviceCookieHasALimitOfItsOwn: a device cookie spares its browser
// the account-wide limit only for its own few wrong passwords (5 here):
// a thief holding it, guessing from six addresses, gets 5 guesses on the
// cookie, then the account's 3, then 429, where before every guess was
// judged. The cookie stays locked, even for the right password; another
// browser the owner signed in with still gets in.
func TestDeviceCookieHasALimitOfItsOwn(t *testing.T) {
	forEachBackend(t, testDeviceCookieHasALimitOfItsOwn)
}

func testDeviceCookieHasALimitOfItsOwn(t *testing.T, be backend) {
	site := proxiedSite(t, be, lnhttp.Config{SignInFailuresPerAccount: 3, SignInFailuresPerDevice: 5})
	name := site.ds.Users[0].ScreenName
	signInOut := func(b *browser) {
		t.Helper()
		wantRedirect(t, b.post("/signin", url.Values{"screen_name": {name}, "password": {seed.Password}}), "/")
		wantRedirect(t, b.post("/signout", nil), "/")
	}
	laptop, phone := site.browser(), site.browser()
	laptop.forwardedFor, phone.forwardedFor = "198.51.100.1", "198.51.100.2"
	signInOut(laptop)
	signInOut(phone)

	var got []int
	for i := range 30 {
		laptop.forwardedFor = fmt.Sprintf("203.0.113.%d", 10+i%6) // under the limit per address (5)
		got = append(got, laptop.post("/signin", url.Values{"screen_name": {name}, "password": {fmt.Sprint("guess-", i)}}).status)
	}
	judged := 0
	for i, status := range got {
		switch {
		case status == http.StatusUnprocessableEntity && i == judged:
			judged++
		case status != http.StatusTooManyRequests:
			t.Fatalf("guess %d: %d after %d judged; statuses %v", i+1, status, judged, got)
		}
	}
	if judged != 5+3 {
		t.Fatalf("%d guesses judged, want 8 (5 on the device cookie, 3 on the account); statuses %v", judged, got)
	}
	laptop.forwardedFor = "198.51.100.1"
	wantStatus(t, laptop.post("/signin", url.Values{"screen_name": {name}, "password": {seed.Password}}), http.StatusTooManyRequests)
	wantRedirect(t, phone.post("/signin", url.Values{"screen_name": {name}, "password": {seed.Password}}), "/")
}

// TestOwnerChangesPasswordDuringAnAttack: others' failed sign-ins, enough
// to lock the account for new browsers, do not stop its owner, signed in
// on a browser it knows, from changing the password or deleting the
// account; the owner's own wrong current passwords still count.
func TestOwnerChangesPasswordDuringAnAttack(t *testing.T) {
	forEachBackend(t, testOwnerChangesPasswordDuringAnAttack)
}

func testOwnerChangesPasswordDuringAnAttack(t *testing.T, be backend) {
	site := proxiedSite(t, be, lnhttp.Config{SignInFailuresPerAccount: 3, PasswordChecksPerAccount: 4})
	u := site.ds.Users[0]
	owner := site.browser()
	owner.forwardedFor = "198.51.100.1"
	owner.signIn(0)
	lockAccount(t, site, u.ScreenName, 6) // past the account's failures (3) and its checks (4)
	stranger := site.browser()
	stranger.forwardedFor = "192.0.2.5"
	wantStatus(t, stranger.post("/signin", url.Values{"screen_name": {u.ScreenName}, "password": {seed.Password}}), http.StatusTooManyRequests)

	edit := fmt.Sprintf("/users/%d", u.ID)
	wantStatus(t, owner.post(edit, url.Values{"screen_name": {u.ScreenName}, "about": {""}, "password": {"a new password!"},
		"current_password": {"not it"}}), http.StatusUnprocessableEntity)
	wantRedirect(t, owner.post(edit, url.Values{"screen_name": {u.ScreenName}, "about": {""}, "password": {"a new password!"},
		"current_password": {seed.Password}}), "/users/")
	// The new password set a new device cookie, bound to it: still known.
	wantRedirect(t, owner.post(fmt.Sprintf("/users/%d/delete", u.ID), url.Values{"current_password": {"a new password!"}}), "/")
	if _, err := site.db.FindUserByID(context.Background(), u.ID); loremnews.ErrorCode(err) != loremnews.ENOTFOUND {
		t.Fatalf("the account is still there: %v", err)
	}
}

// TestRevokingASessionForgetsItsDevice: the lost-laptop button. The owner,
// on the phone, revokes the laptop's session while the account is closed
// to new browsers; the laptop's device cookie no longer makes it the
// owner's browser: the right password from it is refused like a
// stranger's (429), and so is a guess. The phone, whose session stays,
// still gets in, and signing out keeps a browser's cookie as before.
func TestRevokingASessionForgetsItsDevice(t *testing.T) {
	forEachBackend(t, testRevokingASessionForgetsItsDevice)
}

func testRevokingASessionForgetsItsDevice(t *testing.T, be backend) {
	site := proxiedSite(t, be, lnhttp.Config{SignInFailuresPerAccount: 3})
	u := site.ds.Users[0]
	signIn := func(b *browser) *response {
		t.Helper()
		return b.post("/signin", url.Values{"screen_name": {u.ScreenName}, "password": {seed.Password}})
	}
	laptop, phone := site.browser(), site.browser()
	laptop.forwardedFor, phone.forwardedFor = "198.51.100.1", "198.51.100.2"
	wantRedirect(t, signIn(laptop), "/")
	wantRedirect(t, signIn(phone), "/")
	sessions, err := site.db.UserSessions(context.Background(), u.ID, loremnews.SessionLimits{})
	if err != nil || len(sessions) != 2 {
		t.Fatalf("sessions = %v, %v; want the laptop's and the phone's", sessions, err)
	}
	laptopSession := min(sessions[0].ID, sessions[1].ID) // it signed in first
	lockAccount(t, site, u.ScreenName, 4)                // past the account's 3 for new browsers

	wantRedirect(t, phone.post(fmt.Sprintf("/sessions/%d/delete", laptopSession), nil), fmt.Sprintf("/users/%d", u.ID))
	wantRedirect(t, laptop.get("/posts/new"), "/signin") // signed out
	wantStatus(t, signIn(laptop), http.StatusTooManyRequests)
	wantStatus(t, laptop.post("/signin", url.Values{"screen_name": {u.ScreenName}, "password": {"a guess"}}), http.StatusTooManyRequests)

	wantRedirect(t, phone.post("/signout", nil), "/")
	wantRedirect(t, signIn(phone), "/")
}
