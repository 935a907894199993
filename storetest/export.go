package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/loremnews/loremnews"
)

// testExportLoad exports a database with every kind of row and loads it
// into a second one: the copy must hold the same rows, ids and counters.
func testExportLoad(t *testing.T, open Opener) {
	ctx := context.Background()
	src := open(t)
	MustSeed(t, src, 8, 12)
	u := MustCreateUser(t, src, "exporter")
	p := MustCreatePost(t, src, u.ID, "Exported post")
	MustCreateComment(t, src, p.ID, u.ID, "Exported comment")
	if err := src.DeletePost(ctx, 3); err != nil { // a gap in the ids
		t.Fatal(err)
	}
	if err := src.CreateSession(ctx, &loremnews.Session{UserID: u.ID, TokenDigest: []byte("token-digest"), UserAgent: "UA", IPAddress: "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	ds, err := src.ExportDataset(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dst := open(t)
	MustSeed(t, dst, 3, 3) // replaced by the load
	if err := dst.ImportDataset(ctx, ds); err != nil {
		t.Fatal(err)
	}
	a, b := MustBeConsistent(t, src), MustBeConsistent(t, dst)
	if a.Users != b.Users || a.Posts != b.Posts || a.Comments != b.Comments || b.Sessions != 1 {
		t.Fatalf("source %+v, copy %+v", a, b)
	}
	again, err := dst.ExportDataset(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(summary(again)), fmt.Sprint(summary(ds)); got != want {
		t.Fatalf("copy differs from source:\n got %s\nwant %s", got, want)
	}
	// The copy goes on issuing new ids after the copied ones, and knows
	// the deleted post was deleted.
	p2 := MustCreatePost(t, dst, u.ID, "Written after the copy")
	if p2.ID <= p.ID {
		t.Fatalf("new post id %d reuses a copied id (last %d)", p2.ID, p.ID)
	}
	if _, _, err := dst.PostPage(ctx, 3); loremnews.ErrorCode(err) != loremnews.EGONE {
		t.Fatalf("deleted post in the copy: %v, want EGONE", err)
	}
	s, owner, err := dst.FindSessionByTokenDigest(ctx, []byte("token-digest"), loremnews.SessionLimits{})
	if err != nil || owner.ID != u.ID || s.UserAgent != "UA" {
		t.Fatalf("session in the copy = %+v %+v, %v", s, owner, err)
	}
}

// summary is what must survive a copy: every row's ids, texts, counters and
// times (to the microsecond, PostgreSQL's precision).
func summary(ds *loremnews.Dataset) []string {
	var out []string
	for _, u := range ds.Users {
		out = append(out, fmt.Sprintf("u%d %s %s %q %d %s %s", u.ID, u.ScreenName, u.PasswordDigest, u.About, u.PostsCount,
			u.CreatedAt.UTC().Format("2006-01-02T15:04:05.000000"), u.LastSeenAt.UTC().Format("2006-01-02T15:04:05.000000")))
	}
	for _, p := range ds.Posts {
		out = append(out, fmt.Sprintf("p%d %d %q %q %d %s", p.ID, p.UserID, p.Title, p.Description, p.CommentsCount,
			p.UpdatedAt.UTC().Format("2006-01-02T15:04:05.000000")))
	}
	for _, c := range ds.Comments {
		out = append(out, fmt.Sprintf("c%d %d %d %q", c.ID, c.PostID, c.UserID, c.Body))
	}
	for _, s := range ds.Sessions {
		out = append(out, fmt.Sprintf("s%d %d %x", s.ID, s.UserID, s.TokenDigest))
	}
	return out
}
