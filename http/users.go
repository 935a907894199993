package http

import (
	"fmt"
	"net/http"

	"github.com/loremnews/loremnews"
	"golang.org/x/crypto/bcrypt"
)

// userPageLimit is how many posts and how many comments a user page lists;
// "More" links page on through the rest.
const userPageLimit = 100

// userCommentExcerpt is how many characters of each comment a list of a
// user's comments shows (the rest is on the comment's post, a link away),
// so that a page of them costs at most about 100 × 1,500 characters
// however long the comments: an account's comments of 10,000 characters
// would otherwise make its page megabytes. A seeded comment (at most 7
// sentences of 15 words) is always shown whole.
const userCommentExcerpt = 1500

type userPage struct {
	basePage
	User                    *loremnews.User
	Posts                   []*loremnews.Post
	Comments                []*loremnews.Comment
	MorePosts, MoreComments string // URLs of the next pages, "" when all are shown
	IsSelf                  bool
	Sessions                []*loremnews.Session
	CurrentSessionID        int64
}

// userListPage is one further page of a user's posts or comments.
type userListPage struct {
	basePage
	User     *loremnews.User
	Posts    []*loremnews.Post    // on a page of posts
	Comments []*loremnews.Comment // on a page of comments
	More     string
	// ShowsComments tells a page of comments from one of posts.
	ShowsComments bool
}

func userPostsURL(id, before int64) string {
	return sitePath(usersBase, id, pageTail("posts", before))
}

func userCommentsURL(id, before int64) string {
	return sitePath(usersBase, id, pageTail("comments", before))
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

// renderUser renders a user's first page: totals, the newest posts and
// comments, and on the reader's own page their signed-in browsers.
func (h *Handler) renderUser(w http.ResponseWriter, r *http.Request, id int64) {
	u, posts, comments, err := h.store.UserPage(r.Context(), id, userPageLimit)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	h.renderUserPage(w, r, u, posts, comments)
}

// renderUserPage renders a loaded user page, with the sessions list when
// the reader is that user.
func (h *Handler) renderUserPage(w http.ResponseWriter, r *http.Request, u *loremnews.User, posts []*loremnews.Post, comments []*loremnews.Comment) {
	page := &userPage{basePage: basePage{Title: u.ScreenName, Description: u.ScreenName + "'s posts and comments on Lorem News."},
		User: u, Posts: posts, Comments: comments}
	if n := len(posts); n > 0 && u.PostsCount > n {
		page.MorePosts = userPostsURL(u.ID, posts[n-1].ID)
	}
	if n := len(comments); n > 0 && u.CommentsCount > n {
		page.MoreComments = userCommentsURL(u.ID, comments[n-1].ID)
	}
	if st := state(r); st.user != nil && st.user.ID == u.ID {
		page.IsSelf, page.CurrentSessionID = true, st.session.ID
		var err error
		if page.Sessions, err = h.store.UserSessions(r.Context(), u.ID, h.sessionLimits); err != nil {
			h.renderError(w, r, err)
			return
		}
	}
	h.render(w, r, http.StatusOK, page)
}

// userPosts pages on through a user's posts: /users/{id}/posts?before=ID.
func (h *Handler) userPosts(w http.ResponseWriter, r *http.Request) {
	id, before, ok := h.userListArgs(w, r)
	if !ok {
		return
	}
	posts, err := h.store.UserPosts(r.Context(), id, before, userPageLimit+1)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	page := &userListPage{Posts: posts}
	if len(posts) > userPageLimit {
		page.Posts = posts[:userPageLimit]
		page.More = userPostsURL(id, page.Posts[userPageLimit-1].ID)
	}
	h.renderUserList(w, r, id, "Posts", page)
}

// userComments pages on through a user's comments: /users/{id}/comments?before=ID.
func (h *Handler) userComments(w http.ResponseWriter, r *http.Request) {
	id, before, ok := h.userListArgs(w, r)
	if !ok {
		return
	}
	comments, err := h.store.UserComments(r.Context(), id, before, userPageLimit+1)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	page := &userListPage{Comments: comments, ShowsComments: true}
	if len(comments) > userPageLimit {
		page.Comments = comments[:userPageLimit]
		page.More = userCommentsURL(id, page.Comments[userPageLimit-1].ID)
	}
	h.renderUserList(w, r, id, "Comments", page)
}

func (h *Handler) userListArgs(w http.ResponseWriter, r *http.Request) (id, before int64, ok bool) {
	id, err := pathID(r)
	if err == nil {
		before, err = cursor(r, "before")
	}
	if err != nil {
		h.renderError(w, r, err)
		return 0, 0, false
	}
	return id, before, true
}

// renderUserList names the user from the rows when it can (every row
// carries its author), and looks the user up only for an empty page.
func (h *Handler) renderUserList(w http.ResponseWriter, r *http.Request, id int64, what string, page *userListPage) {
	switch {
	case len(page.Posts) > 0:
		page.User = page.Posts[0].Author
	case len(page.Comments) > 0:
		page.User = page.Comments[0].Author
	default:
		u, err := h.store.FindUserByID(r.Context(), id)
		if err != nil {
			h.renderError(w, r, err)
			return
		}
		page.User = u
	}
	page.Title = what + " by " + page.User.ScreenName
	h.render(w, r, http.StatusOK, page)
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

// updateUser saves the profile. A new screen name (the name one signs in
// with) or a new password needs the current password (current_password),
// so a stolen session cannot take the account over. A new password signs
// out every other browser of the account, and gives this one a new
// session and device cookie.
func (h *Handler) updateUser(w http.ResponseWriter, r *http.Request) {
	me, err := self(r)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	in := loremnews.ProfileInput{ScreenName: r.PostForm.Get("screen_name"), About: r.PostForm.Get("about"), Password: r.PostForm.Get("password")}
	in.Normalize()
	err = in.Validate()
	if err == nil && (in.Password != "" || in.ScreenName != me.ScreenName) {
		err = h.checkPassword(w, r, me, r.PostForm.Get("current_password"))
	}
	// A save rewrites the profile: counted like post edits, once the
	// input is valid (and, for a new name or password, confirmed).
	release := func() {}
	if err == nil {
		if release, err = h.reserveWrite(w, r, h.accountEdits); err != nil {
			h.renderError(w, r, err)
			return
		}
	}
	var digest []byte
	if err == nil && in.Password != "" {
		digest, err = bcrypt.GenerateFromPassword([]byte(in.Password), h.cfg.BcryptCost)
	}
	if err == nil {
		change := loremnews.ProfileChange{ScreenName: in.ScreenName, About: in.About}
		var token, device string
		if digest != nil {
			// Every session ends, this browser's too, and this browser gets a
			// new one: a copy of its old cookie signs no one in either. The
			// device cookie is bound to the password: a new one keeps this
			// browser known. Without a new password the cookie this browser
			// holds stays valid as it is.
			change.PasswordDigest = string(digest)
			change.NewSession, token = h.newSession(r, me.ID)
			after := *me
			after.PasswordDigest = string(digest)
			device = h.newDeviceCookie(&after)
			change.NewSession.Device = deviceDigest(device)
		}
		if _, err = h.store.UpdateProfile(r.Context(), me.ID, change); err == nil && token != "" {
			h.setSessionCookie(w, token)
		} else if err != nil {
			release()
		}
		if err == nil && device != "" {
			h.setCookie(w, deviceCookie, device, deviceCookieLifetime)
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
	http.Redirect(w, r, sitePath(usersBase, me.ID, ""), http.StatusSeeOther)
}

// confirmDeleteUser asks before deleting the reader's account, naming what
// goes with it, and asks for the password.
func (h *Handler) confirmDeleteUser(w http.ResponseWriter, r *http.Request) {
	me, err := self(r)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	h.renderDeleteAccount(w, r, http.StatusOK, me.ID, "")
}

// renderDeleteAccount renders the confirmation page; problem says why the
// last try was refused (a wrong password).
func (h *Handler) renderDeleteAccount(w http.ResponseWriter, r *http.Request, status int, id int64, problem string) {
	// Counts only (limit 0): what the deletion takes with it.
	u, _, _, err := h.store.UserPage(r.Context(), id, 0)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	h.render(w, r, status, &confirmPage{basePage: basePage{Title: "Delete account"},
		Question: fmt.Sprintf("Delete your account with its %s and %s?",
			plural(u.PostsCount, "post", "posts").String(), plural(u.CommentsCount, "comment", "comments").String()),
		Detail: u.ScreenName, Action: sitePath(usersBase, u.ID, "/delete"), Button: "Delete my account",
		Cancel: sitePath(usersBase, u.ID, ""), AskPassword: true, Error: problem})
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
		h.renderDeleteAccount(w, r, statusFor(loremnews.EINVALID), me.ID, loremnews.ErrorMessage(err))
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

// revokeSession signs out one of the reader's own browsers and forgets the
// device cookie set with its session: a lost laptop keeps no guesses.
func (h *Handler) revokeSession(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	me := state(r).user
	// Someone else's session and none at all are both ENOTFOUND, said the
	// same way, so ids of other people's sessions cannot be probed.
	if err := h.store.RevokeSession(r.Context(), me.ID, id, h.now().Add(deviceCookieLifetime)); loremnews.ErrorCode(err) == loremnews.ENOTFOUND {
		h.renderError(w, r, notFound("No such session."))
		return
	} else if err != nil {
		h.renderError(w, r, err)
		return
	}
	if id == state(r).session.ID {
		h.clearCookie(w, sessionCookie)
		h.clearCookie(w, deviceCookie)
	}
	h.setFlash(w, "session-revoked")
	http.Redirect(w, r, sitePath(usersBase, me.ID, "#sessions"), http.StatusSeeOther)
}
