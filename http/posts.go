package http

import (
	"fmt"
	"net/http"

	"github.com/loremnews/loremnews"
)

// indexLimit is how many posts the front page lists.
const indexLimit = 50

type indexPage struct {
	basePage
	Heading string
	Posts   []*loremnews.Post
}

type postPage struct {
	basePage
	Post         *loremnews.Post
	Comments     []*loremnews.Comment
	IsOwner      bool
	CommentForm  loremnews.CommentInput
	CommentError string
}

type postFormPage struct {
	basePage
	Action, Submit, Cancel string
	Form                   loremnews.PostInput
	Error                  string
}

func (h *Handler) index(w http.ResponseWriter, r *http.Request) {
	posts, err := h.store.RecentPosts(r.Context(), indexLimit)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, &indexPage{Heading: "Newest posts", Posts: posts})
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
	me := state(r).user
	h.render(w, r, status, &postPage{
		basePage:     basePage{Title: post.Title},
		Post:         post,
		Comments:     comments,
		IsOwner:      me != nil && me.ID == post.UserID,
		CommentForm:  form,
		CommentError: formErr,
	})
}

func (h *Handler) newPost(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, &postFormPage{basePage: basePage{Title: "New post"},
		Action: "/posts", Submit: "Create post", Cancel: "/"})
}

// postInput reads and checks the post form.
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
	if err := in.Validate(); err != nil {
		fail(err)
		return
	}
	post, err := h.store.CreatePost(r.Context(), state(r).user.ID, in)
	if err != nil {
		fail(err)
		return
	}
	http.Redirect(w, r, fmt.Sprintf("/posts/%d", post.ID), http.StatusSeeOther)
}

// renderPostForm shows the form again with the error (422), or the error
// page for anything that is not a validation error.
func (h *Handler) renderPostForm(w http.ResponseWriter, r *http.Request, err error, page *postFormPage) {
	if loremnews.ErrorCode(err) != loremnews.EINVALID {
		h.renderError(w, r, err)
		return
	}
	page.Error = loremnews.ErrorMessage(err)
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
		Action: fmt.Sprintf("/posts/%d", post.ID), Submit: "Save post", Cancel: fmt.Sprintf("/posts/%d", post.ID),
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
			Action: fmt.Sprintf("/posts/%d", post.ID), Submit: "Save post", Cancel: fmt.Sprintf("/posts/%d", post.ID), Form: in})
	}
	if err := in.Validate(); err != nil {
		fail(err)
		return
	}
	if _, err := h.store.UpdatePost(r.Context(), post.ID, in); err != nil {
		fail(err)
		return
	}
	http.Redirect(w, r, fmt.Sprintf("/posts/%d", post.ID), http.StatusSeeOther)
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
