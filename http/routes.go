package http

import "net/http"

// routes lists every route of the site in one place. HTML forms can only
// GET and POST, so updates are POST /thing/{id} and deletes POST
// /thing/{id}/delete, whose form is on the page GET /thing/{id}/delete
// that names what will be lost. Handlers wrapped in h.form check the CSRF token;
// h.signedIn redirects visitors to the sign-in page.
func (h *Handler) routes() {
	m := h.mux
	m.HandleFunc("GET /static/{name}", h.serveStatic)
	m.HandleFunc("GET /favicon.ico", h.favicon)
	m.HandleFunc("GET /robots.txt", h.robots)
	m.HandleFunc("GET /up", h.up)
	// /metrics and the profiler are never served here, whoever asks: they
	// have a listener of their own (serve --metrics-addr).

	m.Handle("GET /{$}", h.page(h.index))

	m.Handle("GET /signup", h.page(h.signUpForm))
	m.Handle("POST /signup", h.form(h.signUp))
	m.Handle("GET /signin", h.page(h.signInForm))
	m.Handle("POST /signin", h.form(h.signIn))
	m.Handle("POST /signout", h.form(h.signedIn(h.signOut)))

	m.Handle("GET /posts/new", h.page(h.signedIn(h.newPost)))
	m.Handle("POST /posts", h.form(h.signedIn(h.createPost)))
	m.Handle("GET /posts/{id}", h.page(h.showPost))
	m.Handle("GET /posts/{id}/edit", h.page(h.signedIn(h.editPost)))
	m.Handle("POST /posts/{id}", h.form(h.signedIn(h.updatePost)))
	m.Handle("GET /posts/{id}/delete", h.page(h.signedIn(h.confirmDeletePost)))
	m.Handle("POST /posts/{id}/delete", h.form(h.signedIn(h.deletePost)))

	// A failed comment leaves this URL in the address bar; reloading it
	// (or pressing Enter there) leads back to the post.
	m.Handle("GET /posts/{id}/comments", h.page(h.postComments))
	m.Handle("POST /posts/{id}/comments", h.form(h.signedIn(h.createComment)))
	m.Handle("GET /comments/{id}/edit", h.page(h.signedIn(h.editComment)))
	m.Handle("POST /comments/{id}", h.form(h.signedIn(h.updateComment)))
	m.Handle("GET /comments/{id}/delete", h.page(h.signedIn(h.confirmDeleteComment)))
	m.Handle("POST /comments/{id}/delete", h.form(h.signedIn(h.deleteComment)))

	m.Handle("GET /users/{id}", h.page(h.showUser))
	m.Handle("GET /users/{id}/posts", h.page(h.userPosts))
	m.Handle("GET /users/{id}/comments", h.page(h.userComments))
	m.Handle("GET /users/{id}/edit", h.page(h.signedIn(h.editUser)))
	m.Handle("POST /users/{id}", h.form(h.signedIn(h.updateUser)))
	m.Handle("GET /users/{id}/delete", h.page(h.signedIn(h.confirmDeleteUser)))
	m.Handle("POST /users/{id}/delete", h.form(h.signedIn(h.deleteUser)))
	m.Handle("POST /sessions/{id}/delete", h.form(h.signedIn(h.revokeSession)))

	// No session, no CSRF token: these are for load generators. When
	// benchmarking is off the route does not exist (404).
	if h.cfg.Benchmark != nil {
		// A browser's request from another site's page is refused
		// (Sec-Fetch-Site/Origin), so a page cannot make its visitors'
		// browsers write here; load generators send neither header.
		m.Handle("POST /benchmarking/{action}", h.sameOrigin(h.benchmark))
		// The yardstick: the same server and middleware, no database, no
		// template. The experiment reports results as a share of it.
		m.Handle("POST /benchmarking/ceiling", h.sameOrigin(h.benchCeiling))
		// Any other method is told to POST, instead of the catch-all's
		// 404: the usual mistake is a load generator left on GET.
		m.HandleFunc("/benchmarking/{action}", benchMethodNotAllowed)
	}

	m.Handle("/", h.page(func(w http.ResponseWriter, r *http.Request) {
		h.renderError(w, r, notFound("Page not found."))
	}))
}
