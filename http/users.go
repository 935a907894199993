package http

import (
	"fmt"
	"net/http"

	"github.com/loremnews/loremnews"
	"golang.org/x/crypto/bcrypt"
)

// userPageLimit caps the posts and the comments listed on a user page.
const userPageLimit = 100

type userPage struct {
	basePage
	User             *loremnews.User
	Posts            []*loremnews.Post
	Comments         []*loremnews.Comment
	IsSelf           bool
	Sessions         []*loremnews.Session
	CurrentSessionID int64
	// DeleteError says why deleting the account was refused.
	DeleteError string
}

type userFormPage struct {
	basePage
	User  *loremnews.User
	Form  loremnews.ProfileInput
	Error string
}

func (h *Handler) showUser(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	h.renderUser(w, r, id)
}

func (h *Handler) renderUser(w http.ResponseWriter, r *http.Request, id int64) {
	h.renderUserPage(w, r, http.StatusOK, id, "")
}

// renderUserPage renders a user's page; deleteError, on the reader's own
// page, says why deleting the account was refused.
func (h *Handler) renderUserPage(w http.ResponseWriter, r *http.Request, status int, id int64, deleteError string) {
	u, posts, comments, err := h.store.UserPage(r.Context(), id, userPageLimit)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	page := &userPage{basePage: basePage{Title: u.ScreenName}, User: u, Posts: posts, Comments: comments, DeleteError: deleteError}
	if st := state(r); st.user != nil && st.user.ID == u.ID {
		page.IsSelf, page.CurrentSessionID = true, st.session.ID
		if page.Sessions, err = h.store.UserSessions(r.Context(), u.ID, h.sessionLimits); err != nil {
			h.renderError(w, r, err)
			return
		}
	}
	h.render(w, r, status, page)
}

// self checks that the path's user is the reader.
func self(r *http.Request) (*loremnews.User, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, err
	}
	if me := state(r).user; me.ID == id {
		return me, nil
	}
	return nil, forbidden("You can only change your own account.")
}

func (h *Handler) editUser(w http.ResponseWriter, r *http.Request) {
	me, err := self(r)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, &userFormPage{basePage: basePage{Title: "Edit profile"}, User: me,
		Form: loremnews.ProfileInput{ScreenName: me.ScreenName, About: me.About}})
}

// updateUser saves the profile. A new password needs the current one
// (current_password), signs out every other browser of the account, and
// gives this one a new session.
func (h *Handler) updateUser(w http.ResponseWriter, r *http.Request) {
	me, err := self(r)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	in := loremnews.ProfileInput{ScreenName: r.PostForm.Get("screen_name"), About: r.PostForm.Get("about"), Password: r.PostForm.Get("password")}
	in.Normalize()
	err = in.Validate()
	var digest []byte
	if err == nil && in.Password != "" {
		if err = h.checkPassword(w, r, me, r.PostForm.Get("current_password")); err == nil {
			digest, err = bcrypt.GenerateFromPassword([]byte(in.Password), h.cfg.BcryptCost)
		}
	}
	if err == nil {
		_, err = h.store.UpdateUser(r.Context(), me.ID, in.ScreenName, in.About, "")
	}
	if err == nil && digest != nil {
		// Every session ends, this browser's too, and this browser gets a
		// new one: a copy of its old cookie signs no one in either.
		if err = h.store.ChangePassword(r.Context(), me.ID, string(digest), 0); err == nil {
			err = h.startSession(w, r, me)
		}
	}
	if loremnews.ErrorCode(err) == loremnews.EINVALID {
		in.Password = "" // never echo a password back into a page
		h.render(w, r, statusFor(loremnews.EINVALID), &userFormPage{basePage: basePage{Title: "Edit profile"},
			User: me, Form: in, Error: loremnews.ErrorMessage(err)})
		return
	} else if err != nil {
		h.renderError(w, r, err)
		return
	}
	h.setFlash(w, "profile-saved")
	http.Redirect(w, r, fmt.Sprintf("/users/%d", me.ID), http.StatusSeeOther)
}

// deleteUser deletes the reader's account once current_password confirms
// it is them.
func (h *Handler) deleteUser(w http.ResponseWriter, r *http.Request) {
	me, err := self(r)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	if err := h.checkPassword(w, r, me, r.PostForm.Get("current_password")); loremnews.ErrorCode(err) == loremnews.EINVALID {
		h.renderUserPage(w, r, statusFor(loremnews.EINVALID), me.ID, loremnews.ErrorMessage(err))
		return
	} else if err != nil {
		h.renderError(w, r, err)
		return
	}
	if err := h.store.DeleteUser(r.Context(), me.ID); err != nil {
		h.renderError(w, r, err)
		return
	}
	h.clearCookie(w, sessionCookie)
	h.clearCookie(w, deviceCookie)
	h.setFlash(w, "account-deleted")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// revokeSession signs out one of the reader's own browsers.
func (h *Handler) revokeSession(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	me := state(r).user
	sessions, err := h.store.UserSessions(r.Context(), me.ID, h.sessionLimits)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	owned := false
	for _, s := range sessions {
		owned = owned || s.ID == id
	}
	if !owned {
		// Someone else's session or none at all: say the same, so ids of
		// other people's sessions cannot be probed.
		h.renderError(w, r, notFound("No such session."))
		return
	}
	if err := h.store.DeleteSession(r.Context(), id); err != nil && loremnews.ErrorCode(err) != loremnews.ENOTFOUND {
		h.renderError(w, r, err)
		return
	}
	if id == state(r).session.ID {
		h.clearCookie(w, sessionCookie)
	}
	h.setFlash(w, "session-revoked")
	http.Redirect(w, r, fmt.Sprintf("/users/%d#sessions", me.ID), http.StatusSeeOther)
}
