package http

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/loremnews/loremnews"
	"golang.org/x/crypto/bcrypt"
)

type authPage struct {
	basePage
	Action     string
	SignUp     bool
	ScreenName string
	ReturnTo   string
	Error      string
	Errors     fieldErrors // sign-up: one message per invalid field
}

// safeReturnTo keeps only a path on this site, so a crafted link cannot
// send a freshly signed-in user elsewhere. Browsers drop tabs and newlines
// from URLs and read a backslash as a slash, so "/\t/evil.example" or
// "/\\evil.example" would leave the site: any control character or
// backslash refuses the whole value, as does anything that parses with a
// scheme or host, or starts with "//".
func safeReturnTo(s string) string {
	if !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") || strings.ContainsRune(s, '\\') {
		return ""
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || !unicode.IsPrint(r) {
			return ""
		}
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, "//") {
		return ""
	}
	return s
}

func (h *Handler) signInForm(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, &authPage{basePage: basePage{Title: "Sign in"}, Action: "/signin",
		ReturnTo: safeReturnTo(r.URL.Query().Get("return_to"))})
}

func (h *Handler) signUpForm(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, &authPage{basePage: basePage{Title: "Sign up"}, Action: "/signup", SignUp: true})
}

// errBadCredentials does not say which of the two was wrong, so the form
// cannot be used to find out which screen names exist.
var errBadCredentials = loremnews.Errorf(loremnews.EINVALID, "Wrong screen name or password.")

func (h *Handler) signIn(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimSpace(r.PostForm.Get("screen_name"))
	password := r.PostForm.Get("password")
	returnTo := safeReturnTo(r.PostForm.Get("return_to"))
	fail := func(err error) {
		if loremnews.ErrorCode(err) != loremnews.EINVALID {
			h.renderError(w, r, err)
			return
		}
		h.render(w, r, statusFor(loremnews.EINVALID), &authPage{basePage: basePage{Title: "Sign in"}, Action: "/signin",
			ScreenName: truncate(name, loremnews.MaxScreenNameLen), ReturnTo: returnTo, Error: loremnews.ErrorMessage(err)})
	}
	// A name no account can have is a wrong name: it reaches neither the
	// database nor the limiters, so it cannot fill them.
	if loremnews.ValidateScreenName(name) != nil || len(password) > loremnews.MaxPasswordLen {
		fail(errBadCredentials)
		return
	}
	account, addr := accountKey(name), addrGroup(h.clientAddr(r))
	// The account is looked up first: a browser is known to it by its id
	// and password (the device cookie), not by a name someone else may
	// take later.
	u, err := h.store.FindUserByScreenName(r.Context(), name)
	switch loremnews.ErrorCode(err) {
	case "":
	case loremnews.ENOTFOUND:
		u = nil
	default:
		fail(err)
		return
	}
	// A browser the account knows (its device cookie) is held to the
	// cookie's own limit instead of the account's and the account's from
	// its address, until it has used it: an attacker behind the owner's
	// address (an office's NAT, the same IPv6 /64) cannot lock the owner's
	// own browser out. Its attempt stays taken only when the password is
	// judged wrong.
	known, releaseDevice, err := h.trustedDevice(r, u)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	judgedWrong := false
	defer func() {
		if !judgedWrong {
			releaseDevice()
		}
	}()
	release, err := h.reserveAttempt(w, r, account, addr, known)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	if u == nil {
		// Spend the same time as a real check, so timing does not tell
		// whether the screen name exists.
		h.checkDummy(password)
		fail(errBadCredentials)
		return
	}
	if !h.checkDigest(r.Context(), u.PasswordDigest, password) {
		judgedWrong = true
		fail(errBadCredentials)
		return
	}
	release()
	h.rehash(r, u, password)
	if err := h.replaceSession(w, r, u); err != nil {
		fail(err)
		return
	}
	h.setFlash(w, "signed-in")
	if returnTo == "" {
		returnTo = "/"
	}
	http.Redirect(w, r, returnTo, http.StatusSeeOther)
}

// reserveAttempt counts a sign-in attempt against its limits before the
// password is checked, so requests sent at once cannot all be judged, and
// returns the function that gives it back (a successful attempt's), or
// the error to answer: a refusal (429) or a failure.
func (h *Handler) reserveAttempt(w http.ResponseWriter, r *http.Request, account, addr string, known bool) (release func(), err error) {
	release, refusedBy, wait, err := reserveAll(r.Context(), h.failureLimits(account, addr, known)...)
	if err != nil {
		return nil, err
	} else if refusedBy != nil {
		return nil, h.tooMany(w, refusedBy, wait, known)
	}
	// The password check is counted, whatever its outcome — and only an
	// attempt that gets this far is checked: one refused above must not
	// count toward the account's cap, or a few requests from one address
	// would close the account to every new browser.
	if refusedBy, wait, err := h.reserveCheck(r.Context(), account, addr, known); err != nil {
		release()
		return nil, err
	} else if refusedBy != nil {
		release()
		return nil, h.tooMany(w, refusedBy, wait, known)
	}
	return release, nil
}

// replaceSession signs u in on this browser: its session, whoever it
// was, ends, and a new one starts.
func (h *Handler) replaceSession(w http.ResponseWriter, r *http.Request, u *loremnews.User) error {
	if old := state(r).session; old != nil {
		if err := h.store.DeleteSession(r.Context(), old.UserID, old.ID); err != nil && loremnews.ErrorCode(err) != loremnews.ENOTFOUND {
			return err
		}
	}
	return h.startSession(w, r, u)
}

// checkDummy compares password with the dummy digest, as long as a real
// check at the configured cost takes, and remembers how long it took.
func (h *Handler) checkDummy(password string) {
	start := time.Now()
	bcrypt.CompareHashAndPassword(h.dummyDigest, []byte(password))
	h.dummyTook.Store(int64(time.Since(start)))
}

// checkDigest reports whether password matches a stored digest. A digest
// made at a lower cost than --bcrypt-cost (before the cost was raised, for
// an account that has not signed in since) checks faster than the dummy
// digest unknown names are checked against, so the check then waits out
// the difference: timing must not tell which names exist.
func (h *Handler) checkDigest(ctx context.Context, digest, password string) bool {
	start := time.Now()
	ok := len(password) <= loremnews.MaxPasswordLen && bcrypt.CompareHashAndPassword([]byte(digest), []byte(password)) == nil
	if cost, err := bcrypt.Cost([]byte(digest)); err == nil && cost < h.cfg.BcryptCost {
		if rest := time.Duration(h.dummyTook.Load()) - time.Since(start); rest > 0 {
			t := time.NewTimer(rest)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
	}
	return ok
}

// rehash stores u's password again at --bcrypt-cost when its digest was
// made at another cost, after a successful sign-in (the only time the
// password is known), so stored digests follow a changed cost: a raised
// cost protects them, and the dummy check for unknown names (made at
// the configured cost) takes as long as the check of a known one. It
// updates u. A failure is logged; the sign-in goes on.
func (h *Handler) rehash(r *http.Request, u *loremnews.User, password string) {
	if cost, err := bcrypt.Cost([]byte(u.PasswordDigest)); err != nil || cost == h.cfg.BcryptCost {
		return
	}
	digest, err := bcrypt.GenerateFromPassword([]byte(password), h.cfg.BcryptCost)
	done := false
	if err == nil {
		// Only over the digest just checked: a password changed meanwhile
		// (by its owner, in another browser) is never put back.
		done, err = h.store.RehashPassword(r.Context(), u.ID, u.PasswordDigest, string(digest))
	}
	if err != nil {
		h.log.Warn("rehash password at the configured cost", "user", u.ID, "err", err)
		return
	}
	if done {
		u.PasswordDigest = string(digest)
	}
}

// tooMany is the 429 for an attempt refusedBy refused, with Retry-After.
// The message names the limit, so the reader knows what would help:
// waiting, another address, or a browser that signed in before.
func (h *Handler) tooMany(w http.ResponseWriter, refusedBy limiter, wait time.Duration, knownDevice bool) error {
	minutes := int(wait.Minutes()) + 1
	w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
	var msg string
	switch refusedBy {
	case h.accountAddrFailures:
		msg = fmt.Sprintf("Too many wrong passwords for this account from your address. Try again in %d minutes.", minutes)
	case h.addrFailures:
		msg = fmt.Sprintf("Too many failed sign-ins from your address, to any account. Try again in %d minutes.", minutes)
	case h.accountFailures:
		msg = fmt.Sprintf("Too many failed sign-ins to this account, from many addresses. Try again in %d minutes.", minutes)
		if !knownDevice {
			msg = fmt.Sprintf("Too many failed sign-ins to this account from browsers it has not signed in with. Try again in %d minutes, or from a browser you have signed in with before.", minutes)
		}
	case h.addrChecks:
		msg = fmt.Sprintf("Too many sign-ins from your address. Try again in %d minutes.", minutes)
	case h.accountChecks:
		msg = fmt.Sprintf("Too many sign-ins to this account from browsers it has not signed in with. Try again in %d minutes, or from a browser you have signed in with before.", minutes)
	case h.addrSignUps:
		msg = fmt.Sprintf("Too many sign-ups from your address. Try again in %d minutes.", minutes)
	case h.accountPosts:
		msg = fmt.Sprintf("You have written the most posts one account may in %s (%d). Try again in %d minutes.", windowText(h.cfg.ContentWindow), h.cfg.PostsPerAccount, minutes)
	case h.accountEdits:
		msg = fmt.Sprintf("You have saved the most edits (posts, comments and profile) one account may in %s (%d). Try again in %d minutes.", windowText(h.cfg.ContentWindow), h.cfg.EditsPerAccount, minutes)
	case h.accountComments:
		msg = fmt.Sprintf("You have written the most comments one account may in %s (%d). Try again in %d minutes.", windowText(h.cfg.ContentWindow), h.cfg.CommentsPerAccount, minutes)
	default:
		msg = fmt.Sprintf("Too many attempts. Try again in %d minutes.", minutes)
	}
	return loremnews.Errorf(loremnews.ETOOMANY, "%s", msg)
}

// windowText names a limit's window for a message: "an hour", "30 minutes".
func windowText(d time.Duration) string {
	if d == time.Hour {
		return "an hour"
	}
	return fmt.Sprintf("%d minutes", int(d.Minutes()))
}

// reserveWrite takes one of the reader's posts or comments (l) for the
// window, before it is written; release gives it back when the write
// fails. A refusal is a 429 naming the limit; a limit that cannot be
// checked, a 503.
func (h *Handler) reserveWrite(w http.ResponseWriter, r *http.Request, l limiter) (release func(), err error) {
	release, refusedBy, wait, err := reserveAll(r.Context(), reservation{l: l, key: keyOf("account-id", strconv.FormatInt(state(r).user.ID, 10))})
	if err != nil {
		return nil, err
	} else if refusedBy != nil {
		return nil, h.tooMany(w, refusedBy, wait, true)
	}
	return release, nil
}

// failureLimits are the limits a password guess for account from addr
// counts against until it is judged right. The address's limit comes
// first: an address past it is refused before the account's limits cost a
// write to the database. A browser the account knows (knownDevice) is held
// to its device cookie's limit instead of the account's, and is not
// refused by the account's limit from its address, which others behind
// the same address may have used up; its guesses still count there, so a
// stolen cookie, once past its own limit, finds that one spent too.
func (h *Handler) failureLimits(account, addr string, knownDevice bool) []reservation {
	rs := []reservation{
		{l: h.addrFailures, key: keyOf("address", addr)},
		{l: h.accountAddrFailures, key: keyOf("account+address", account, addr), countOnly: knownDevice},
	}
	if !knownDevice {
		rs = append(rs, reservation{l: h.accountFailures, key: keyOf("account", account)})
	}
	return rs
}

// reserveCheck counts one password check (a bcrypt comparison) against
// the address's limit and, from a browser the account does not know, the
// account's, whatever the check's outcome: it is never given back. It
// answers the limiter that refused, if one did, or the error (EUNAVAILABLE)
// of one that could not count.
func (h *Handler) reserveCheck(ctx context.Context, account, addr string, knownDevice bool) (refusedBy limiter, wait time.Duration, err error) {
	rs := []reservation{{l: h.addrChecks, key: keyOf("checks-address", addr)}}
	if !knownDevice {
		rs = append(rs, reservation{l: h.accountChecks, key: keyOf("checks-account", account)})
	}
	_, refusedBy, wait, err = reserveAll(ctx, rs...)
	return refusedBy, wait, err
}

// checkPassword confirms that password is u's, for changes that need it
// (a new password or screen name, deleting the account). Wrong guesses
// count against the same limits as failed sign-ins: from a browser the
// account knows, the device cookie's own limit, so others' failed
// sign-ins cannot stop the owner from changing the password or deleting
// the account; from any other browser (or one past its device limit),
// the account-wide one, so a stolen session gets no more guesses than
// sign-in gives, from however many addresses.
func (h *Handler) checkPassword(w http.ResponseWriter, r *http.Request, u *loremnews.User, password string) error {
	if password == "" {
		return loremnews.Errorf(loremnews.EINVALID, "Enter your current password.")
	}
	addr, account := addrGroup(h.clientAddr(r)), accountKey(u.ScreenName)
	known, releaseDevice, err := h.trustedDevice(r, u)
	if err != nil {
		return err
	}
	judgedWrong := false // the device's attempt stays taken only then
	defer func() {
		if !judgedWrong {
			releaseDevice()
		}
	}()
	release, refusedBy, wait, err := reserveAll(r.Context(), h.failureLimits(account, addr, known)...)
	if err != nil {
		return err
	} else if refusedBy != nil {
		return h.tooMany(w, refusedBy, wait, known)
	}
	// Counted only for a guess that is checked (see signIn).
	if refusedBy, wait, err := h.reserveCheck(r.Context(), account, addr, known); err != nil {
		release()
		return err
	} else if refusedBy != nil {
		release()
		return h.tooMany(w, refusedBy, wait, known)
	}
	if !h.checkDigest(r.Context(), u.PasswordDigest, password) {
		judgedWrong = true
		return loremnews.Errorf(loremnews.EINVALID, "Your current password is not right.")
	}
	release()
	return nil
}

// signUp checks every field and reports all their problems at once; a
// taken screen name is found only once the input is valid.
func (h *Handler) signUp(w http.ResponseWriter, r *http.Request) {
	in := loremnews.SignUpInput{ScreenName: r.PostForm.Get("screen_name"), Password: r.PostForm.Get("password")}
	in.Normalize()
	errs := fieldErrors{}
	fail := func(err error) {
		if err != nil && loremnews.ErrorCode(err) != loremnews.EINVALID {
			h.renderError(w, r, err)
			return
		}
		if err != nil {
			errs["screen-name"] = loremnews.ErrorMessage(err)
		}
		h.render(w, r, statusFor(loremnews.EINVALID), &authPage{basePage: basePage{Title: "Sign up"}, Action: "/signup",
			SignUp: true, ScreenName: in.ScreenName, Errors: errs})
	}
	if err := loremnews.ValidateScreenName(in.ScreenName); err != nil {
		errs["screen-name"] = loremnews.ErrorMessage(err)
	}
	if err := loremnews.ValidatePassword(in.Password); err != nil {
		errs["password"] = loremnews.ErrorMessage(err)
	}
	if len(errs) > 0 {
		fail(nil)
		return
	}
	// Each sign-up costs a bcrypt hash and makes an account: limited per
	// address, counted whether or not the name turns out to be taken.
	if _, refusedBy, wait, err := reserveAll(r.Context(), reservation{l: h.addrSignUps, key: keyOf("sign-up", addrGroup(h.clientAddr(r)))}); err != nil {
		h.renderError(w, r, err)
		return
	} else if refusedBy != nil {
		h.renderError(w, r, h.tooMany(w, refusedBy, wait, false))
		return
	}
	digest, err := bcrypt.GenerateFromPassword([]byte(in.Password), h.cfg.BcryptCost)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	u, err := h.store.CreateUser(r.Context(), in.ScreenName, string(digest))
	if err != nil {
		fail(err) // the one invalid case left: the screen name is taken
		return
	}
	// The browser that made the account is one it has signed in with (its
	// device cookie, set with the session): its owner is not locked out of
	// it by others' failed sign-ins.
	if err := h.startSession(w, r, u); err != nil {
		h.renderError(w, r, err)
		return
	}
	h.setFlash(w, "signed-up")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (h *Handler) signOut(w http.ResponseWriter, r *http.Request) {
	if err := h.store.DeleteSession(r.Context(), state(r).session.UserID, state(r).session.ID); err != nil && loremnews.ErrorCode(err) != loremnews.ENOTFOUND {
		h.renderError(w, r, err)
		return
	}
	h.clearCookie(w, sessionCookie)
	h.setFlash(w, "signed-out")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
