package seed

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/loremnews/loremnews"
)

func TestGenerate(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := Config{Seed: 5, Now: now, BcryptCost: 4}
	a, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Users) != 100 || len(a.Posts) != 1000 {
		t.Fatalf("%d users, %d posts", len(a.Users), len(a.Posts))
	}
	perPost := map[int64]int{}
	titles := map[string]bool{}
	for i, c := range a.Comments {
		perPost[c.PostID]++
		if c.ID != int64(i+1) || (i > 0 && c.CreatedAt.Before(a.Comments[i-1].CreatedAt)) {
			t.Fatal("comment ids do not follow time")
		}
		if post := a.Posts[c.PostID-1]; c.CreatedAt.Before(post.CreatedAt) || c.CreatedAt.After(now) {
			t.Fatalf("comment %d at %v, post at %v", c.ID, c.CreatedAt, post.CreatedAt)
		}
	}
	for i, p := range a.Posts {
		if n := perPost[p.ID]; n < 5 || n > 15 {
			t.Fatalf("post %d has %d comments", p.ID, n)
		}
		if titles[p.Title] || len(p.Title) < 5 {
			t.Fatalf("bad or duplicate title %q", p.Title)
		}
		titles[p.Title] = true
		if paras := len(paragraphsOf(p.Description)); paras < 5 || paras > 10 {
			t.Fatalf("post %d has %d paragraphs", p.ID, paras)
		}
		if i > 0 && p.CreatedAt.Before(a.Posts[i-1].CreatedAt) {
			t.Fatal("post ids do not follow time")
		}
	}
	if bcrypt.CompareHashAndPassword([]byte(a.Users[0].PasswordDigest), []byte(Password)) != nil {
		t.Fatal("seeded password is not \"password\"")
	}

	b, _ := Generate(cfg)
	if b.Posts[500].Title != a.Posts[500].Title || len(b.Comments) != len(a.Comments) || b.Comments[77].Body != a.Comments[77].Body {
		t.Fatal("same seed, different data")
	}
	cfg.Seed = 6
	c, _ := Generate(cfg)
	if c.Posts[500].Title == a.Posts[500].Title && c.Comments[77].Body == a.Comments[77].Body {
		t.Fatal("different seeds, same data")
	}
	if _, err := Generate(Config{Users: -1}); err == nil || !strings.Contains(err.Error(), "bad sizes: -1 users") {
		t.Fatalf("negative users: %v, want an error naming the bad size", err)
	}
}

func paragraphsOf(s string) []string {
	var out []string
	start := 0
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '\n' && s[i+1] == '\n' {
			out = append(out, s[start:i])
			start = i + 2
		}
	}
	return append(out, s[start:])
}

// TestGenerateRepeatable: the same seed at two different clocks gives the
// same rows — content, counts and order — with every timestamp moved by
// one common offset.
func TestGenerateRepeatable(t *testing.T) {
	first := time.Date(2026, 3, 1, 10, 0, 0, 250_000_000, time.UTC)
	second := first.Add(41*24*time.Hour + 7*time.Hour + 13*time.Second + 600*time.Millisecond)
	a, err := Generate(Config{Seed: 1, Now: first, BcryptCost: 4})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(Config{Seed: 1, Now: second, BcryptCost: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Users) != len(b.Users) || len(a.Posts) != len(b.Posts) || len(a.Comments) != len(b.Comments) {
		t.Fatalf("counts differ: %d/%d/%d users/posts/comments, then %d/%d/%d",
			len(a.Users), len(a.Posts), len(a.Comments), len(b.Users), len(b.Posts), len(b.Comments))
	}
	offset := b.Users[0].CreatedAt.Sub(a.Users[0].CreatedAt)
	if offset%time.Second != 0 || offset <= 0 {
		t.Fatalf("offset %v: want a positive whole number of seconds", offset)
	}
	same := func(x, y time.Time) bool { return y.Sub(x) == offset }
	for i, u := range a.Users {
		v := b.Users[i]
		for _, f := range []struct {
			field string
			same  bool
		}{
			{"ID", u.ID == v.ID}, {"ScreenName", u.ScreenName == v.ScreenName}, {"About", u.About == v.About},
			{"CreatedAt", same(u.CreatedAt, v.CreatedAt)}, {"UpdatedAt", same(u.UpdatedAt, v.UpdatedAt)}, {"LastSeenAt", same(u.LastSeenAt, v.LastSeenAt)},
		} {
			if !f.same {
				t.Fatalf("user %d's %s differs: %+v\nthen %+v", i, f.field, u, v)
			}
		}
	}
	for i, p := range a.Posts {
		q := b.Posts[i]
		for _, f := range []struct {
			field string
			same  bool
		}{
			{"ID", p.ID == q.ID}, {"UserID", p.UserID == q.UserID}, {"Title", p.Title == q.Title}, {"Description", p.Description == q.Description},
			{"CreatedAt", same(p.CreatedAt, q.CreatedAt)}, {"UpdatedAt", same(p.UpdatedAt, q.UpdatedAt)}, {"PublishedAt", same(p.PublishedAt, q.PublishedAt)},
		} {
			if !f.same {
				t.Fatalf("post %d's %s differs: %+v\nthen %+v", i, f.field, p, q)
			}
		}
	}
	for i, c := range a.Comments {
		d := b.Comments[i]
		for _, f := range []struct {
			field string
			same  bool
		}{
			{"ID", c.ID == d.ID}, {"PostID", c.PostID == d.PostID}, {"UserID", c.UserID == d.UserID}, {"Body", c.Body == d.Body},
			{"CreatedAt", same(c.CreatedAt, d.CreatedAt)}, {"UpdatedAt", same(c.UpdatedAt, d.UpdatedAt)},
		} {
			if !f.same {
				t.Fatalf("comment %d's %s differs: %+v\nthen %+v", i, f.field, c, d)
			}
		}
	}
}

// TestStream: the counts New announces are the rows its sequences yield;
// reading a sequence again yields the same rows; a reader may stop early;
// and at a larger size ids still follow time, every comment falls after
// its post (within maxCommentDelay) and before now, and no title repeats.
func TestStream(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	set, err := New(Config{Users: 50, Posts: 5000, Seed: 11, Now: now, BcryptCost: 4})
	if err != nil {
		t.Fatal(err)
	}
	postTimes := map[int64]time.Time{}
	titles := map[string]bool{}
	var last time.Time
	posts := 0
	for p := range set.DatasetStream.Posts {
		posts++
		if p.ID != int64(posts) || p.CreatedAt.Before(last) || p.CreatedAt.After(now) {
			t.Fatalf("post %d (#%d) at %v after %v: ids must follow time, before %v", p.ID, posts, p.CreatedAt, last, now)
		}
		if titles[p.Title] {
			t.Fatalf("title %q repeats", p.Title)
		}
		titles[p.Title] = true
		last = p.CreatedAt
		postTimes[p.ID] = p.CreatedAt
	}
	comments := 0
	var thousandth string
	var lastComment struct {
		at   time.Time
		post int64
	}
	for c := range set.DatasetStream.Comments {
		comments++
		posted, ok := postTimes[c.PostID]
		switch {
		case c.ID != int64(comments):
			t.Fatalf("comment #%d has id %d", comments, c.ID)
		case !ok:
			t.Fatalf("comment %d on unknown post %d", c.ID, c.PostID)
		case c.CreatedAt.Before(lastComment.at) || c.CreatedAt.Equal(lastComment.at) && c.PostID < lastComment.post:
			t.Fatalf("comment %d (post %d, %v) after post %d's at %v: want time, then post order", c.ID, c.PostID, c.CreatedAt, lastComment.post, lastComment.at)
		case c.CreatedAt.Before(posted) || c.CreatedAt.After(now) || c.CreatedAt.Sub(posted) > maxCommentDelay:
			t.Fatalf("comment %d at %v, its post at %v, now %v", c.ID, c.CreatedAt, posted, now)
		}
		lastComment.at, lastComment.post = c.CreatedAt, c.PostID
		if c.ID == 1000 {
			thousandth = fmt.Sprint(*c)
		}
	}
	if posts != set.Posts || comments != set.Comments {
		t.Fatalf("yielded %d posts and %d comments, announced %d and %d", posts, comments, set.Posts, set.Comments)
	}
	if comments < 5*posts || comments > 15*posts {
		t.Fatalf("%d comments for %d posts: want 5–15 each", comments, posts)
	}

	// Replayed, and stopped early.
	i := 0
	for c := range set.DatasetStream.Comments {
		if i++; i == 1000 {
			if got := fmt.Sprint(*c); got != thousandth {
				t.Fatalf("comment 1000 on replay:\n%s\nfirst time:\n%s", got, thousandth)
			}
			break
		}
	}
}

// TestScreenNamesNeverLookAlike: a screen name is a word and the user's
// number, and the stores refuse a name that reads as another
// (loremnews.NameKeys). The words "ac" and "ad" can meet ("ad5" reads as
// "ac15"); the generator draws such a name again. Seeds whose names met
// are tried, and no generated set has two names that look alike.
func TestScreenNamesNeverLookAlike(t *testing.T) {
	if len(nearWords) == 0 {
		t.Fatal("no words whose names can meet: the test no longer tests the redraw")
	}
	for _, seed := range []uint64{1, 3, 7} {
		screenNamesNeverLookAlike(t, seed)
	}
}

func screenNamesNeverLookAlike(t *testing.T, seed uint64) {
	s, err := New(Config{Users: 30_000, Posts: 1, Seed: seed, BcryptCost: 4})
	if err != nil {
		t.Fatal(err)
	}
	shown, cased := map[string]string{}, map[string]string{}
	for u := range s.DatasetStream.Users {
		k := loremnews.ScreenNameKeys(u.ScreenName)
		for _, other := range []string{shown[k.Shown], shown[k.Small], shown[k.Capitals], cased[k.Shown]} {
			if other != "" {
				t.Fatalf("screen names %q and %q look alike (%+v)", other, u.ScreenName, k)
			}
		}
		shown[k.Shown], cased[k.Small], cased[k.Capitals] = u.ScreenName, u.ScreenName, u.ScreenName
	}
}

// TestTitlesNeverLookAlike: the generator draws titles unique by
// look-alike key (the key titles were compared by before
// loremnews.TitleKey, finer, so they are unique by that too), so a seeded
// set always imports. Lorem's titles from seed
// 184 have two that look alike within the first 3,000 ("Nisi" and "Nisl"
// share a key); drawTitle's never do.
func TestTitlesNeverLookAlike(t *testing.T) {
	const draws = 3000
	raw, lorem := map[string]bool{}, NewLorem(184)
	keys, alike := map[string]bool{}, false
	for range draws {
		title := lorem.Title()
		k := loremnews.ConfusableKey(title)
		alike = alike || keys[k] && !raw[title]
		raw[title], keys[k] = true, true
	}
	if !alike {
		t.Fatal("no look-alike titles among the raw draws: the test no longer tests drawTitle")
	}
	lorem, titles := NewLorem(184), newTitleSet(draws)
	seen := map[string]string{}
	for range draws {
		title := drawTitle(lorem, titles)
		k := loremnews.ConfusableKey(title)
		if other, ok := seen[k]; ok {
			t.Fatalf("titles %q and %q look alike (key %q)", other, title, k)
		}
		seen[k] = title
	}
}
