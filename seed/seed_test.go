package seed

import (
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
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
	if _, err := Generate(Config{Users: -1}); err == nil {
		t.Fatal("negative users accepted")
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
