package http

import (
	"net/http"
	"strconv"
	"strings"

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

// safeReturnTo keeps only local paths, so a crafted link cannot send a
// freshly signed-in user to another site.
func safeReturnTo(s string) string {
	if !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") || strings.HasPrefix(s, "/\\") || strings.ContainsAny(s, "\r\n") {
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
			ScreenName: name, ReturnTo: returnTo, Error: loremnews.ErrorMessage(err)})
	}
	ip, account := clientIP(r), accountKey(name)
	for _, lim := range []struct {
		l   *failureLimiter
		key string
	}{{h.ipFailures, ip}, {h.accountFailures, account}} {
		if blocked, left := lim.l.blocked(lim.key); blocked {
			w.Header().Set("Retry-After", strconv.Itoa(int(left.Seconds())+1))
			h.renderError(w, r, loremnews.Errorf(loremnews.ETOOMANY,
				"Too many failed sign-ins. Try again in %d minutes.", int(left.Minutes())+1))
			return
		}
	}
	badCredentials := func() {
		h.ipFailures.fail(ip)
		h.accountFailures.fail(account)
		fail(errBadCredentials)
	}
	u, err := h.store.FindUserByScreenName(r.Context(), name)
	switch loremnews.ErrorCode(err) {
	case "":
	case loremnews.ENOTFOUND:
		// Spend the same time as a real check, so timing does not tell
		// whether the screen name exists.
		bcrypt.CompareHashAndPassword(dummyDigest, []byte(password))
		badCredentials()
		return
	default:
		fail(err)
		return
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordDigest), []byte(password)) != nil {
		badCredentials()
		return
	}
	h.accountFailures.reset(account)
	if err := h.startSession(w, r, u); err != nil {
		fail(err)
		return
	}
	h.setFlash(w, "signed-in")
	if returnTo == "" {
		returnTo = "/"
	}
	http.Redirect(w, r, returnTo, http.StatusSeeOther)
}

// dummyDigest is a bcrypt hash of nothing anyone types, compared against
// when the screen name does not exist.
var dummyDigest, _ = bcrypt.GenerateFromPassword([]byte("not a real password, only for timing"), bcrypt.DefaultCost)

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
	if err := h.store.DeleteSession(r.Context(), state(r).session.ID); err != nil && loremnews.ErrorCode(err) != loremnews.ENOTFOUND {
		h.renderError(w, r, err)
		return
	}
	h.clearCookie(w, sessionCookie)
	h.setFlash(w, "signed-out")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
