// Package seed generates the demo data set: by default 100 users (password
// "password"), 1,000 posts by random users with 5–10 paragraphs each, and
// 5–15 comments per post by random users, with plausible times. The data is
// a pure function of Config, so --seed N always gives the same database; the
// store imports it (loremnews.Database.ImportDataset) in one transaction.
package seed

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/loremnews/loremnews"
	"golang.org/x/crypto/bcrypt"
)

// Config sizes the data set. Zero values take the defaults of the package
// comment.
type Config struct {
	Users       int
	Posts       int
	MinComments int
	MaxComments int
	Seed        uint64
	// Now anchors the times: posts fall in the year before it. Now moves
	// every timestamp by one common offset and changes nothing else.
	Now time.Time
	// BcryptCost for the shared password; 0 means bcrypt.DefaultCost.
	BcryptCost int
}

// Password is every seeded user's password.
const Password = "password"

// Dataset is a generated data set (no sessions). Ids are assigned from 1,
// in time order.
type Dataset = loremnews.Dataset

// Generate builds the data set for cfg.
func Generate(cfg Config) (*Dataset, error) {
	if cfg.Users == 0 {
		cfg.Users = 100
	}
	if cfg.Posts == 0 {
		cfg.Posts = 1000
	}
	if cfg.MinComments == 0 && cfg.MaxComments == 0 {
		cfg.MinComments, cfg.MaxComments = 5, 15
	}
	if cfg.Now.IsZero() {
		cfg.Now = time.Now().UTC()
	}
	if cfg.BcryptCost == 0 {
		cfg.BcryptCost = bcrypt.DefaultCost
	}
	if cfg.Users < 1 || cfg.Posts < 0 || cfg.MinComments < 0 || cfg.MaxComments < cfg.MinComments {
		return nil, fmt.Errorf("seed: bad sizes: %d users, %d posts, %d–%d comments per post", cfg.Users, cfg.Posts, cfg.MinComments, cfg.MaxComments)
	}
	// One bcrypt hash shared by all users: hashing is deliberately slow
	// (~50 ms each), and 100 identical passwords gain nothing from 100 salts.
	digest, err := bcrypt.GenerateFromPassword([]byte(Password), cfg.BcryptCost)
	if err != nil {
		return nil, fmt.Errorf("seed: hash password: %w", err)
	}

	r := rand.New(rand.NewPCG(cfg.Seed, 0x10e5))
	lorem := NewLorem(cfg.Seed + 1)
	ds := &Dataset{}
	year := 365 * 24 * time.Hour
	// Times are drawn against a fixed reference, then moved to Now: drawn
	// against Now itself, the spans (and so how many random numbers each
	// draw consumes) would change with the clock, and with them every row
	// after the first comment.
	now := seedReference
	start := now.Add(-year)

	for i := range cfg.Users {
		created := start.Add(-time.Duration(r.Int64N(int64(year)))).Truncate(time.Second)
		ds.Users = append(ds.Users, &loremnews.User{
			ID:             int64(i + 1),
			ScreenName:     fmt.Sprintf("%s%d", loremWords[r.IntN(len(loremWords))], i+1),
			PasswordDigest: string(digest),
			About:          lorem.Sentence(),
			LastSeenAt:     created,
			CreatedAt:      created,
			UpdatedAt:      created,
		})
	}

	// Post times spread over the last year, ascending, so ids follow time.
	postTimes := make([]time.Time, cfg.Posts)
	for i := range postTimes {
		postTimes[i] = start.Add(time.Duration(r.Int64N(int64(year)))).Truncate(time.Second)
	}
	sortTimes(postTimes)
	titles := map[string]bool{}
	for i, t := range postTimes {
		title := lorem.Title()
		for titles[title] || len(title) < loremnews.MinTitleLen {
			title = lorem.Title()
		}
		titles[title] = true
		ds.Posts = append(ds.Posts, &loremnews.Post{
			ID:          int64(i + 1),
			UserID:      int64(1 + r.IntN(cfg.Users)),
			Title:       title,
			Description: lorem.Paragraphs(5 + r.IntN(6)),
			PublishedAt: t,
			CreatedAt:   t,
			UpdatedAt:   t,
		})
	}

	// Comments come after their post, before now; ids follow time overall.
	for _, p := range ds.Posts {
		n := cfg.MinComments + r.IntN(cfg.MaxComments-cfg.MinComments+1)
		for range n {
			span := now.Sub(p.CreatedAt)
			t := p.CreatedAt.Add(time.Duration(r.Int64N(int64(span) + 1))).Truncate(time.Second)
			ds.Comments = append(ds.Comments, &loremnews.Comment{
				PostID:    p.ID,
				UserID:    int64(1 + r.IntN(cfg.Users)),
				Body:      lorem.Paragraph(),
				CreatedAt: t,
				UpdatedAt: t,
			})
		}
	}
	sortComments(ds.Comments)
	for i, c := range ds.Comments {
		c.ID = int64(i + 1)
	}
	shiftTimes(ds, cfg.Now.Truncate(time.Second).Sub(now))
	return ds, nil
}

// seedReference is the "now" times are drawn against before being moved
// to Config.Now.
var seedReference = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// shiftTimes moves every timestamp of ds by d.
func shiftTimes(ds *Dataset, d time.Duration) {
	for _, u := range ds.Users {
		u.LastSeenAt, u.CreatedAt, u.UpdatedAt = u.LastSeenAt.Add(d), u.CreatedAt.Add(d), u.UpdatedAt.Add(d)
	}
	for _, p := range ds.Posts {
		p.PublishedAt, p.CreatedAt, p.UpdatedAt = p.PublishedAt.Add(d), p.CreatedAt.Add(d), p.UpdatedAt.Add(d)
	}
	for _, c := range ds.Comments {
		c.CreatedAt, c.UpdatedAt = c.CreatedAt.Add(d), c.UpdatedAt.Add(d)
	}
}
