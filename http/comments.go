package http

import (
	"net/http"

	"github.com/loremnews/loremnews"
)

type commentFormPage struct {
	basePage
	Comment *loremnews.Comment
	Form    loremnews.CommentInput
	Error   string
}

func commentInput(r *http.Request) loremnews.CommentInput {
	in := loremnews.CommentInput{Body: r.PostForm.Get("body")}
	in.Normalize()
	return in
}

func (h *Handler) createComment(w http.ResponseWriter, r *http.Request) {
	postID, err := pathID(r)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	in := commentInput(r)
	err = in.Validate()
	var c *loremnews.Comment
	if err == nil {
		var release func()
		if release, err = h.reserveWrite(w, r, h.accountComments); err == nil {
			if c, err = h.store.CreateComment(r.Context(), postID, state(r).user.ID, in); err != nil {
				release()
			}
		}
	}
	if loremnews.ErrorCode(err) == loremnews.EINVALID {
		h.renderPost(w, r, statusFor(loremnews.EINVALID), postID, in, loremnews.ErrorMessage(err))
		return
	} else if err != nil {
		h.renderError(w, r, err)
		return
	}
	h.setFlash(w, "comment-created")
	http.Redirect(w, r, sitePath(postsBase, postID, commentTail(c.ID)), http.StatusSeeOther)
}

// ownComment loads the comment named in the path and checks the reader wrote it.
func (h *Handler) ownComment(r *http.Request) (*loremnews.Comment, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, err
	}
	c, err := h.store.FindCommentByID(r.Context(), id)
	if err != nil {
		return nil, err
	}
	if c.UserID != state(r).user.ID {
		return nil, forbidden("Only the author can change this comment.")
	}
	return c, nil
}

func (h *Handler) editComment(w http.ResponseWriter, r *http.Request) {
	c, err := h.ownComment(r)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, &commentFormPage{basePage: basePage{Title: "Edit comment"},
		Comment: c, Form: loremnews.CommentInput{Body: c.Body}})
}

func (h *Handler) updateComment(w http.ResponseWriter, r *http.Request) {
	c, err := h.ownComment(r)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	in := commentInput(r)
	err = in.Validate()
	if err == nil {
		// An edit rewrites up to a whole comment: counted like post edits.
		var release func()
		if release, err = h.reserveWrite(w, r, h.accountEdits); err != nil {
			h.renderError(w, r, err)
			return
		}
		if _, err = h.store.UpdateComment(r.Context(), c.ID, in); err != nil {
			release()
		}
	}
	if loremnews.ErrorCode(err) == loremnews.EINVALID {
		h.render(w, r, statusFor(loremnews.EINVALID), &commentFormPage{basePage: basePage{Title: "Edit comment"},
			Comment: c, Form: in, Error: loremnews.ErrorMessage(err)})
		return
	} else if err != nil {
		h.renderError(w, r, err)
		return
	}
	h.setFlash(w, "comment-saved")
	http.Redirect(w, r, sitePath(postsBase, c.PostID, commentTail(c.ID)), http.StatusSeeOther)
}

func (h *Handler) confirmDeleteComment(w http.ResponseWriter, r *http.Request) {
	c, err := h.ownComment(r)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, &confirmPage{basePage: basePage{Title: "Delete comment"},
		Question: "Delete this comment on “" + c.Post.Title + "”?", Detail: c.Body,
		Action: sitePath(commentsBase, c.ID, "/delete"), Button: "Delete comment",
		Cancel: sitePath(postsBase, c.PostID, commentTail(c.ID))})
}

func (h *Handler) deleteComment(w http.ResponseWriter, r *http.Request) {
	c, err := h.ownComment(r)
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	if err := h.store.DeleteComment(r.Context(), c.ID); err != nil {
		h.renderError(w, r, err)
		return
	}
	h.setFlash(w, "comment-deleted")
	http.Redirect(w, r, sitePath(postsBase, c.PostID, "#comments"), http.StatusSeeOther)
}
