package http

import (
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
	rs := []reservation{
		{h.accountAddrFailures, keyOf("account+address", account, addr)},
		{h.addrFailures, keyOf("address", addr)},
	}
	known := h.knownDevice(r, account)
	if !known {
		rs = append(rs, reservation{h.accountFailures, keyOf("account", account)})
	}
	// The attempt is counted before the password is checked, so requests
	// sent at once cannot all be judged; a successful one is given back.
	release, ok, wait := reserveAll(rs...)
	if !ok {
		h.tooMany(w, r, wait, known)
		return
	}
	u, err := h.store.FindUserByScreenName(r.Context(), name)
	switch loremnews.ErrorCode(err) {
	case "":
	case loremnews.ENOTFOUND:
		// Spend the same time as a real check, so timing does not tell
		// whether the screen name exists.
		bcrypt.CompareHashAndPassword(h.dummyDigest, []byte(password))
		fail(errBadCredentials)
		return
	default:
		release() // not the client's fault
		fail(err)
		return
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordDigest), []byte(password)) != nil {
		fail(errBadCredentials)
		return
	}
	release()
	if old := state(r).session; old != nil {
		// Signing in again replaces this browser's session, whoever it was.
		if err := h.store.DeleteSession(r.Context(), old.UserID, old.ID); err != nil && loremnews.ErrorCode(err) != loremnews.ENOTFOUND {
			fail(err)
			return
		}
	}
	if err := h.startSession(w, r, u); err != nil {
		fail(err)
		return
	}
	h.setDeviceCookie(w, account)
	h.setFlash(w, "signed-in")
	if returnTo == "" {
		returnTo = "/"
	}
	http.Redirect(w, r, returnTo, http.StatusSeeOther)
}

// tooMany answers 429 with Retry-After. A browser without the account's
// device cookie is told that one it signed in from before still can.
func (h *Handler) tooMany(w http.ResponseWriter, r *http.Request, wait time.Duration, knownDevice bool) {
	minutes := int(wait.Minutes()) + 1
	w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
	msg := fmt.Sprintf("Too many failed sign-ins. Try again in %d minutes.", minutes)
	if !knownDevice {
		msg = fmt.Sprintf("Too many failed sign-ins. Try again in %d minutes, or from a browser you have signed in with before.", minutes)
	}
	h.renderError(w, r, loremnews.Errorf(loremnews.ETOOMANY, "%s", msg))
}

// checkPassword confirms that password is u's, for changes that need it
// (a new password, deleting the account). Wrong guesses count against the
// same per-address limits as sign-ins, so a stolen session cannot be used
// to guess the password.
func (h *Handler) checkPassword(w http.ResponseWriter, r *http.Request, u *loremnews.User, password string) error {
	if password == "" {
		return loremnews.Errorf(loremnews.EINVALID, "Enter your current password.")
	}
	addr := addrGroup(h.clientAddr(r))
	release, ok, wait := reserveAll(
		reservation{h.accountAddrFailures, keyOf("account+address", accountKey(u.ScreenName), addr)},
		reservation{h.addrFailures, keyOf("address", addr)},
	)
	if !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		return loremnews.Errorf(loremnews.ETOOMANY, "Too many wrong passwords. Try again in %d minutes.", int(wait.Minutes())+1)
	}
	if len(password) > loremnews.MaxPasswordLen || bcrypt.CompareHashAndPassword([]byte(u.PasswordDigest), []byte(password)) != nil {
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
	if _, ok, wait := reserveAll(reservation{h.addrSignUps, keyOf("sign-up", addrGroup(h.clientAddr(r)))}); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		h.renderError(w, r, loremnews.Errorf(loremnews.ETOOMANY, "Too many sign-ups from your address. Try again in %d minutes.", int(wait.Minutes())+1))
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
