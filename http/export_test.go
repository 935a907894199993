package http

import (
	"context"
	"io"
	"time"

	"github.com/loremnews/loremnews"
)

// Hooks for the rendering benchmarks (bench_test.go): each renders one page,
// layout included, from data already in memory, so a benchmark measures the
// templates alone, without the database or the network.

func RenderUserPage(w io.Writer, u *loremnews.User, posts []*loremnews.Post, comments []*loremnews.Comment) error {
	p := &userPage{basePage: basePage{Title: u.ScreenName, now: time.Now()}, User: u, Posts: posts, Comments: comments}
	return layout(&p.basePage, p.view()).Render(context.Background(), w)
}

func RenderPostPage(w io.Writer, post *loremnews.Post, comments []*loremnews.Comment) error {
	p := &postPage{basePage: basePage{Title: post.Title, Description: excerpt(post.Description, 155), now: time.Now()}, Post: post, Comments: comments}
	return layout(&p.basePage, p.view()).Render(context.Background(), w)
}

// UserPageLimit is how many posts and how many comments a page of a user's
// lists.
const UserPageLimit = userPageLimit

// SetClock sets the clock the handler reads a page's time from (the ages
// it shows, "3 hours ago"), so a test can compare a page byte for byte.
func SetClock(h *Handler, now func() time.Time) { h.now = now }

func RenderIndexPage(w io.Writer, posts []*loremnews.Post) error {
	p := &indexPage{basePage: basePage{now: time.Now()}, Heading: "Posts", Posts: posts}
	return layout(&p.basePage, p.view()).Render(context.Background(), w)
}
