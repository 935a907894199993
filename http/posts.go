package http

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/loremnews/loremnews"
)

// indexLimit is how many posts a page of the front page lists.
const indexLimit = 50

type indexPage struct {
	basePage
	Heading string
	Posts   []*loremnews.Post
	// More is the URL of the next (older) page, "" on the last one.
	More string
}

type postPage struct {
	basePage
	Post *loremnews.Post
	// Comments are the newest loremnews.PostCommentsPageSize at most;
	// More is the URL of the page of older ones, "" when all are shown.
	Comments     []*loremnews.Comment
	More         string
	IsOwner      bool
	CommentForm  loremnews.CommentInput
	CommentError string
}

// postCommentsPage is a further page of a post's comments, older than
// those of the page before it.
type postCommentsPage struct {
	basePage
	Post     *loremnews.Post
	Comments []*loremnews.Comment
	More     string
}

// postCommentsURL is the page of a post's comments older than the
// comment before: /posts/{id}/comments?before=ID.
func postCommentsURL(id, before int64) string {
	return sitePath(postsBase, id, pageTail("comments", before))
}

type postFormPage struct {
	basePage
	Action, Submit, Cancel string
	Form                   loremnews.PostInput
	Errors                 fieldErrors // by field id: post-title, post-description
}

var postFields = []string{"post-title", "post-description"}

// validatePost checks every field of the post form, each on its own.
func validatePost(in loremnews.PostInput) error {
	errs := fieldErrors{}
	if err := loremnews.ValidateTitle(in.Title); err != nil {
		errs["post-title"] = loremnews.ErrorMessage(err)
	}
	if err := loremnews.ValidateDescription(in.Description); err != nil {
		errs["post-description"] = loremnews.ErrorMessage(err)
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// index lists the newest posts, then pages back through older ones as
// Hacker News does: "More" carries the id of the last post shown
// (/?before=950), and the next page starts below it. A post inserted or
// deleted meanwhile never shifts what the next page shows.
func (h *Handler) index(w http.ResponseWriter, r *http.Request) {
	before, err := cursor(r, "before")
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	posts, err := h.store.PostsBefore(r.Context(), before, indexLimit+1)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	page := &indexPage{Heading: "Newest posts", Posts: posts}
	if before != math.MaxInt64 {
		page.Title, page.Heading = "Older posts", "Older posts"
	}
	if len(posts) > indexLimit {
		page.Posts = posts[:indexLimit]
		page.More = "/?before=" + strconv.FormatInt(page.Posts[indexLimit-1].ID, 10)
	}
	h.render(w, r, http.StatusOK, page)
}

// cursor reads a keyset cursor from the query: the id of the last row the
// previous page showed. Absent, it is above every id (the first page).
func cursor(r *http.Request, name string) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return math.MaxInt64, nil
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		return 0, badRequest(fmt.Sprintf("The %q in this link must be a positive whole number, as in ?%s=950; follow the More link at the bottom of a page.", name, name))
	}
	return id, nil
}

// postComments pages on through a post's comments, as a user's page does
// through theirs: /posts/{id}/comments?before=ID lists the comments older
// than ID, a page of loremnews.PostCommentsPageSize, with a link to the
// next. Without before it sends the reader to the post's comments.
func (h *Handler) postComments(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	if r.URL.Query().Get("before") == "" {
		http.Redirect(w, r, sitePath(postsBase, id, "#comments"), http.StatusSeeOther)
		return
	}
	before, err := cursor(r, "before")
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	const limit = loremnews.PostCommentsPageSize
	post, comments, err := h.store.PostComments(r.Context(), id, before, limit+1)
	if loremnews.ErrorCode(err) == loremnews.EGONE {
		h.setFlash(w, "post-gone") // as for the post page itself
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	} else if err != nil {
		h.renderError(w, r, err)
		return
	}
	page := &postCommentsPage{basePage: basePage{Title: "Comments on " + post.Title}, Post: post, Comments: comments}
	if len(comments) > limit {
		page.Comments = comments[:limit]
		page.More = postCommentsURL(id, page.Comments[limit-1].ID)
	}
	h.render(w, r, http.StatusOK, page)
}

func (h *Handler) showPost(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	h.renderPost(w, r, http.StatusOK, id, loremnews.CommentInput{}, "")
}

// renderPost renders a post page; the comment form is re-filled after a
// failed comment.
func (h *Handler) renderPost(w http.ResponseWriter, r *http.Request, status int, id int64, form loremnews.CommentInput, formErr string) {
	post, comments, err := h.store.PostPage(r.Context(), id)
	if loremnews.ErrorCode(err) == loremnews.EGONE {
		// A link to a deleted post (from a page rendered before the
		// delete) leads to the front page with a notice, not to an error.
		h.setFlash(w, "post-gone")
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	} else if err != nil {
		h.renderError(w, r, err)
		return
	}
	h.renderPostPage(w, r, status, post, comments, form, formErr)
}

// renderPostPage renders a loaded post page: the post and the first page
// of its comments (PostPage's), with a link to the older ones when the
// post has more than that page shows.
func (h *Handler) renderPostPage(w http.ResponseWriter, r *http.Request, status int, post *loremnews.Post, comments []*loremnews.Comment, form loremnews.CommentInput, formErr string) {
	me := state(r).user
	page := &postPage{
		basePage:     basePage{Title: post.Title, Description: excerpt(post.Description, 155)},
		Post:         post,
		Comments:     comments,
		IsOwner:      me != nil && me.ID == post.UserID,
		CommentForm:  form,
		CommentError: formErr,
	}
	// A full page and a total above it: older comments follow. (Fewer
	// than a page means there are no others, whatever the counter says.)
	if n := len(comments); n >= loremnews.PostCommentsPageSize && post.CommentsCount > n {
		page.More = postCommentsURL(post.ID, comments[n-1].ID)
	}
	h.render(w, r, status, page)
}

func (h *Handler) newPost(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, &postFormPage{basePage: basePage{Title: "New post"},
		Action: "/posts", Submit: "Create post", Cancel: "/"})
}

// postInput reads the post form and trims it; the handlers check it with
// validatePost.
func postInput(r *http.Request) loremnews.PostInput {
	in := loremnews.PostInput{Title: r.PostForm.Get("title"), Description: r.PostForm.Get("description")}
	in.Normalize()
	return in
}

func (h *Handler) createPost(w http.ResponseWriter, r *http.Request) {
	in := postInput(r)
	fail := func(err error) {
		h.renderPostForm(w, r, err, &postFormPage{basePage: basePage{Title: "New post"},
			Action: "/posts", Submit: "Create post", Cancel: "/", Form: in})
	}
	if err := validatePost(in); err != nil {
		fail(err)
		return
	}
	release, err := h.reserveWrite(w, r, h.accountPosts)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	post, err := h.store.CreatePost(r.Context(), state(r).user.ID, in)
	if err != nil {
		release()
		fail(err)
		return
	}
	h.setFlash(w, "post-created")
	http.Redirect(w, r, sitePath(postsBase, post.ID, ""), http.StatusSeeOther)
}

// renderPostForm shows the form again with every field's error (422), or
// the error page for anything that is not a validation error. The store's
// one validation error, a taken title, belongs to the title.
func (h *Handler) renderPostForm(w http.ResponseWriter, r *http.Request, err error, page *postFormPage) {
	var errs fieldErrors
	switch {
	case errors.As(err, &errs):
	case loremnews.ErrorCode(err) == loremnews.EINVALID:
		errs = fieldErrors{"post-title": loremnews.ErrorMessage(err)}
	default:
		h.renderError(w, r, err)
		return
	}
	page.Errors = errs
	h.render(w, r, statusFor(loremnews.EINVALID), page)
}

// ownPost loads the post named in the path and checks the reader owns it.
func (h *Handler) ownPost(r *http.Request) (*loremnews.Post, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, err
	}
	post, err := h.store.FindPostByID(r.Context(), id)
	if err != nil {
		return nil, err
	}
	if post.UserID != state(r).user.ID {
		return nil, forbidden("Only the author can change this post.")
	}
	return post, nil
}

func (h *Handler) editPost(w http.ResponseWriter, r *http.Request) {
	post, err := h.ownPost(r)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, &postFormPage{basePage: basePage{Title: "Edit post"},
		Action: sitePath(postsBase, post.ID, ""), Submit: "Save post", Cancel: sitePath(postsBase, post.ID, ""),
		Form: loremnews.PostInput{Title: post.Title, Description: post.Description}})
}

func (h *Handler) updatePost(w http.ResponseWriter, r *http.Request) {
	post, err := h.ownPost(r)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	in := postInput(r)
	fail := func(err error) {
		h.renderPostForm(w, r, err, &postFormPage{basePage: basePage{Title: "Edit post"},
			Action: sitePath(postsBase, post.ID, ""), Submit: "Save post", Cancel: sitePath(postsBase, post.ID, ""), Form: in})
	}
	if err := validatePost(in); err != nil {
		fail(err)
		return
	}
	release, err := h.reserveWrite(w, r, h.accountEdits)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	if _, err := h.store.UpdatePost(r.Context(), post.ID, in); err != nil {
		release()
		fail(err)
		return
	}
	h.setFlash(w, "post-saved")
	http.Redirect(w, r, sitePath(postsBase, post.ID, ""), http.StatusSeeOther)
}

// confirmPage asks before a delete that cannot be undone: it names what
// will be lost and holds the form that POSTs the delete.
type confirmPage struct {
	basePage
	Question string // the heading: "Delete this post and its 14 comments?"
	Detail   string // what it is, quoted: the title or the comment
	Action   string // where the form POSTs
	Button   string
	Cancel   string
	// AskPassword adds a current_password field (deleting the account).
	AskPassword bool
	Error       string
}

func (h *Handler) confirmDeletePost(w http.ResponseWriter, r *http.Request) {
	post, err := h.ownPost(r)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	q := "Delete this post?"
	switch post.CommentsCount {
	case 0:
	case 1:
		q = "Delete this post and its comment?"
	default:
		q = fmt.Sprintf("Delete this post and its %d comments?", post.CommentsCount)
	}
	h.render(w, r, http.StatusOK, &confirmPage{basePage: basePage{Title: "Delete post"},
		Question: q, Detail: post.Title, Action: sitePath(postsBase, post.ID, "/delete"),
		Button: "Delete post", Cancel: sitePath(postsBase, post.ID, "")})
}

func (h *Handler) deletePost(w http.ResponseWriter, r *http.Request) {
	post, err := h.ownPost(r)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	if err := h.store.DeletePost(r.Context(), post.ID); err != nil {
		h.renderError(w, r, err)
		return
	}
	h.setFlash(w, "post-deleted")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
