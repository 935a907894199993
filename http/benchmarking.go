package http

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/loremnews/loremnews"
)

// The benchmarking endpoints, as in the talk's demo app (fractaledmind/
// wrocloverb-2024's BenchmarkingController): POST /benchmarking/{action}, no
// session, no CSRF token, each request first touching a random user's
// last_seen_at (inside the store call) so that every request writes; all
// but point_read, the read alone. Each action is one call of the
// loremnews.BenchmarkStore the handler was given, then a response.

// benchActions are the eight single actions: the seven the mixes draw
// from (benchActionOrder) and point_read.
var benchActions = map[string]func(h *Handler, w http.ResponseWriter, r *http.Request) error{
	"post_create":     (*Handler).benchPostCreate,
	"comment_create":  (*Handler).benchCommentCreate,
	"post_destroy":    (*Handler).benchPostDestroy,
	"comment_destroy": (*Handler).benchCommentDestroy,
	"post_show":       (*Handler).benchPostShow,
	"posts_index":     (*Handler).benchPostsIndex,
	"user_show":       (*Handler).benchUserShow,
	"point_read":      (*Handler).benchPointRead,
}

// benchActionOrder fixes the column order of the weight tables.
var benchActionOrder = []string{"post_create", "comment_create", "post_destroy", "comment_destroy", "post_show", "posts_index", "user_show"}

// benchMixes are the weights (in hundredths) of the talk's three mixes
// (its BenchmarkingController's read_heavy, write_heavy, balanced), in
// benchActionOrder.
var benchMixes = map[string][]int{
	"read_heavy":  {10, 10, 2, 3, 25, 25, 25},
	"write_heavy": {25, 25, 5, 20, 5, 15, 5},
	"balanced":    {17, 17, 5, 11, 17, 17, 16},
}

// BenchmarkSingleActions lists the seven single actions (not the mixes, and
// not point_read), in the order of the mixes' weight tables.
func BenchmarkSingleActions() []string { return slices.Clone(benchActionOrder) }

// BenchmarkActions lists every action name the endpoint accepts.
func BenchmarkActions() []string {
	names := slices.Clone(benchActionOrder)
	return append(names, "read_heavy", "write_heavy", "balanced", "point_read")
}

// pickAction draws one action by the mix's weights.
func pickAction(weights []int) string {
	total := 0
	for _, w := range weights {
		total += w
	}
	n := rand.IntN(total)
	for i, w := range weights {
		if n < w {
			return benchActionOrder[i]
		}
		n -= w
	}
	return benchActionOrder[len(benchActionOrder)-1]
}

func (h *Handler) benchmark(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("action")
	if weights, ok := benchMixes[name]; ok {
		name = pickAction(weights)
	}
	action, ok := benchActions[name]
	if !ok {
		h.renderError(w, r, notFound(fmt.Sprintf("No benchmarking action %q; try one of %s.", r.PathValue("action"), strings.Join(BenchmarkActions(), ", "))))
		return
	}
	setRouteLabel(r, "POST /benchmarking/"+name)
	w.Header().Set(benchActionHeader, name)
	if err := action(h, w, r); err != nil {
		h.renderError(w, r, err)
	}
}

// The headers of a benchmarking response that say what it did, so a load
// generator can tell the actions of a mix apart and check afterwards that
// every write it was told of is there: X-Benchmark-Action names the action
// run; X-Benchmark-Wrote the rows a write created or deleted ("post=12",
// "comment=345 post=12"; a deleted post took its comments with it).
const (
	benchActionHeader = "X-Benchmark-Action"
	benchWroteHeader  = "X-Benchmark-Wrote"
)

// benchMethodNotAllowed answers a benchmarking URL asked with a method
// other than POST: 405, with the Allow header and a line that says what to
// send.
func benchMethodNotAllowed(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Allow", http.MethodPost)
	http.Error(w, "405 method not allowed: the benchmarking endpoints take POST (loremnews load -m POST, hey -m POST)", http.StatusMethodNotAllowed)
}

// publishedHeaders are the only request headers post_create writes into
// its post, a public page. An allow-list, because a block-list cannot know
// every header a proxy, identity provider or client adds (Cf-Access-Jwt-
// Assertion, X-Amzn-Oidc-Data, DPoP, From, X-Originating-Ip, …): these
// five describe the client's software and what it accepts, and none of
// them carries a credential or who the client is.
var publishedHeaders = []string{"Accept", "Accept-Encoding", "Accept-Language", "Content-Type", "User-Agent"}

// headerLines writes the request's published headers (publishedHeaders)
// one per line, sorted by name, as the description of a benchmark post.
// A value a one-line field would refuse (loremnews.OneLineText: invalid
// UTF-8, control, invisible or text-direction characters such as U+202E,
// stacked marks) is left out.
func headerLines(r *http.Request) string {
	var b strings.Builder
	for _, k := range publishedHeaders {
		for _, v := range r.Header[k] {
			if loremnews.OneLineText(v) {
				fmt.Fprintf(&b, "%s: %s\n", k, v)
			}
		}
	}
	return b.String()
}

func (h *Handler) benchPostCreate(w http.ResponseWriter, r *http.Request) error {
	in := loremnews.PostInput{
		Title:       "Post " + uuid.NewString(),
		Description: truncate(headerLines(r), loremnews.MaxDescriptionLen),
	}
	if err := in.Validate(); err != nil { // as the site's form does
		return err
	}
	p, err := h.cfg.Benchmark.CreatePost(r.Context(), in)
	if err != nil {
		return err
	}
	w.Header().Set(benchWroteHeader, fmt.Sprintf("post=%d", p.ID))
	http.Redirect(w, r, sitePath(postsBase, p.ID, ""), http.StatusSeeOther)
	return nil
}

func (h *Handler) benchCommentCreate(w http.ResponseWriter, r *http.Request) error {
	c, err := h.cfg.Benchmark.CreateComment(r.Context(), loremnews.CommentInput{Body: "Comment " + uuid.NewString()})
	if err != nil {
		return err
	}
	w.Header().Set(benchWroteHeader, fmt.Sprintf("comment=%d post=%d", c.ID, c.PostID))
	http.Redirect(w, r, sitePath(postsBase, c.PostID, ""), http.StatusSeeOther)
	return nil
}

func (h *Handler) benchPostDestroy(w http.ResponseWriter, r *http.Request) error {
	id, err := h.cfg.Benchmark.DeletePost(r.Context())
	if err != nil {
		return err
	}
	w.Header().Set(benchWroteHeader, fmt.Sprintf("post=%d", id))
	http.Redirect(w, r, "/", http.StatusSeeOther)
	return nil
}

func (h *Handler) benchCommentDestroy(w http.ResponseWriter, r *http.Request) error {
	id, postID, err := h.cfg.Benchmark.DeleteComment(r.Context())
	if err != nil {
		return err
	}
	w.Header().Set(benchWroteHeader, fmt.Sprintf("comment=%d post=%d", id, postID))
	http.Redirect(w, r, sitePath(postsBase, postID, ""), http.StatusSeeOther)
	return nil
}

func (h *Handler) benchPostShow(w http.ResponseWriter, r *http.Request) error {
	post, comments, err := h.cfg.Benchmark.ShowPost(r.Context())
	if err != nil {
		return err
	}
	h.renderPostPage(w, r, http.StatusOK, post, comments, loremnews.CommentInput{}, "")
	return nil
}

// benchPostsIndex renders the index with 100 posts from a random id on.
func (h *Handler) benchPostsIndex(w http.ResponseWriter, r *http.Request) error {
	from, posts, err := h.cfg.Benchmark.ListPosts(r.Context(), 100)
	if err != nil {
		return err
	}
	h.render(w, r, http.StatusOK, &indexPage{Heading: fmt.Sprintf("Posts from #%d", from), Posts: posts})
	return nil
}

func (h *Handler) benchUserShow(w http.ResponseWriter, r *http.Request) error {
	u, posts, comments, err := h.cfg.Benchmark.ShowUser(r.Context(), userPageLimit)
	if err != nil {
		return err
	}
	h.renderUserPage(w, r, u, posts, comments)
	return nil
}

// benchPointRead is the trivial database read: one random user's name by
// id, as plain text, with no write (not even the touch every other action
// makes), so a report shows what a read alone costs next to the ceiling.
func (h *Handler) benchPointRead(w http.ResponseWriter, r *http.Request) error {
	name, err := h.cfg.Benchmark.PointRead(r.Context())
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "Hello %s!\n", name)
	return nil
}

// benchCeiling answers at once: what this binary's HTTP stack alone can do
// on this machine, the ceiling the other actions are measured against.
func (h *Handler) benchCeiling(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok\n"))
}
