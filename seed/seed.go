// Package seed generates the demo data set: by default 100 users (password
// "password"), 1,000 posts by random users with 5–10 paragraphs each, and
// 5–15 comments per post by random users, with plausible times. The data is
// a pure function of Config, so --seed N always gives the same database.
//
// The rows are generated one at a time as a store reads them (New), so
// memory does not grow with the size of the set: what is held is one row,
// the comments not yet due (those of the last few days' posts, see
// maxCommentDelay) and a bit set of the titles used (titleSet).
package seed

import (
	"container/heap"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/loremnews/loremnews"
	"github.com/mtibben/confusables"
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

// Set is the data set of a Config as a stream. Each sequence generates its
// rows afresh from the seed every time it is read, so reading it twice
// gives the same rows twice. Ids are assigned from 1, in time order.
type Set struct {
	loremnews.DatasetStream
	// How many rows each sequence yields, known before any is generated.
	Users, Posts, Comments int
}

// Rows is the number of rows of the set.
func (s *Set) Rows() int { return s.Users + s.Posts + s.Comments }

// Generate builds the whole data set for cfg in memory. Stores load large
// sets from New instead.
func Generate(cfg Config) (*Dataset, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return &Dataset{
		Users:    slices.Collect(s.DatasetStream.Users),
		Posts:    slices.Collect(s.DatasetStream.Posts),
		Comments: slices.Collect(s.DatasetStream.Comments),
	}, nil
}

// maxCommentDelay bounds how long after its post a comment comes (as on
// news sites, where a story's discussion is over within days). It is what
// keeps generation in bounded memory: comments are emitted in time order,
// and only those of posts younger than this wait to be.
const maxCommentDelay = 7 * 24 * time.Hour

// seedReference is the "now" times are drawn against before being moved
// to Config.Now: drawn against Now itself, the spans (and so how many
// random numbers each draw consumes) would change with the clock, and with
// them every row after the first comment.
var seedReference = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const year = 365 * 24 * time.Hour

// Each part of the data draws from a random stream of its own, so that
// a sequence can be replayed without the others: the comments replay the
// post times, and the comment counts are known before any comment is made.
const (
	streamUsers = 0x10e5 + iota
	streamPostTimes
	streamPosts
	streamCommentCounts
	streamComments
)

// New checks cfg and returns its data set as a stream. It hashes the shared
// password and counts the comments (one random draw per post); no row is
// generated until a sequence is read.
func New(cfg Config) (*Set, error) {
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
	// (~50 ms each), and identical passwords gain nothing from many salts.
	digest, err := bcrypt.GenerateFromPassword([]byte(Password), cfg.BcryptCost)
	if err != nil {
		return nil, fmt.Errorf("seed: hash password: %w", err)
	}
	g := &generator{cfg: cfg, digest: string(digest), shift: cfg.Now.Truncate(time.Second).Sub(seedReference)}
	s := &Set{Users: cfg.Users, Posts: cfg.Posts}
	for n := range g.commentCounts() {
		s.Comments += n
	}
	s.DatasetStream = loremnews.DatasetStream{Users: g.users, Posts: g.posts, Comments: g.comments}
	return s, nil
}

// generator makes the rows of one Config.
type generator struct {
	cfg    Config
	digest string
	// shift moves the times drawn against seedReference to Config.Now.
	shift time.Duration
}

func (g *generator) rand(stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(g.cfg.Seed, stream))
}

// users yields the users, created in the year before the first post.
// Their screen names, a word and the user's number, never look alike
// (loremnews.NameKeys): the numbers differ, so two names can read as one
// only where one word's key is another's with l, o, S or B after it (1,
// 0, 5 and 8 read as those): "ad5" reads as "ac15", as d reads as cl.
// Such a name is drawn again (TestScreenNamesNeverLookAlike); it keeps
// each user's word, a byte each, to know.
func (g *generator) users(yield func(*loremnews.User) bool) {
	r := g.rand(streamUsers)
	lorem := NewLorem(g.cfg.Seed + 1)
	start := seedReference.Add(-year)
	words := make([]uint8, g.cfg.Users)
	for i := range g.cfg.Users {
		created := start.Add(-time.Duration(r.Int64N(int64(year)))).Truncate(time.Second).Add(g.shift)
		number := strconv.Itoa(i + 1)
		w := r.IntN(len(loremWords))
		for readsAsEarlier(w, number, words) {
			w = r.IntN(len(loremWords))
		}
		words[i] = uint8(w)
		u := &loremnews.User{
			ID:             int64(i + 1),
			ScreenName:     loremWords[w] + number,
			PasswordDigest: g.digest,
			About:          lorem.Sentence(),
			LastSeenAt:     created,
			CreatedAt:      created,
			UpdatedAt:      created,
		}
		if !yield(u) {
			return
		}
	}
}

// nearWords lists, for each word (its index in loremWords), the words
// whose key is its key followed by what digits read as, with those digits:
// "ac" has ("ad", "1"), as "ad"'s key is "acl".
var nearWords = func() map[int][]nearWord {
	digits := map[rune]byte{'l': '1', 'o': '0', 'S': '5', 'B': '8'}
	near := map[int][]nearWord{}
	for a, wa := range loremWords {
		ka := wordKey(wa)
		for b, wb := range loremWords {
			rest, ok := strings.CutPrefix(wordKey(wb), ka)
			if !ok || rest == "" {
				continue
			}
			var ds []byte
			for _, c := range rest {
				d, ok := digits[c]
				if !ok {
					ds = nil
					break
				}
				ds = append(ds, d)
			}
			if ds != nil {
				near[a] = append(near[a], nearWord{word: b, digits: string(ds)})
			}
		}
	}
	return near
}()

// wordKey is the key the data set's names were drawn apart by: the
// skeleton screen names were compared by when the data set was made
// (loremnews.ScreenNameKeys' as shown, which then also read nn as m and d
// as cl), kept as it was so that a seed gives the same names.
func wordKey(w string) string {
	w = strings.ReplaceAll(strings.Trim(w, "_-."), "nn", "m")
	var b strings.Builder
	for _, r := range w {
		switch r {
		case 'w':
			b.WriteString("vv")
		case 'W':
			b.WriteString("VV")
		case 'd':
			b.WriteString("cl")
		case '0', 'O':
			b.WriteByte('o')
		case '5':
			b.WriteByte('S')
		case '8':
			b.WriteByte('B')
		default:
			b.WriteRune(r)
		}
	}
	return confusables.Skeleton(b.String())
}

type nearWord struct {
	word   int
	digits string
}

// readsAsEarlier reports whether the name of word w and number reads as an
// earlier user's (words holds their words): the number is near's digits
// followed by that user's number.
func readsAsEarlier(w int, number string, words []uint8) bool {
	for _, n := range nearWords[w] {
		rest, ok := strings.CutPrefix(number, n.digits)
		if !ok || rest == "" || rest[0] == '0' {
			continue
		}
		if m, err := strconv.Atoi(rest); err == nil && m >= 1 && m < len(words) && int(words[m-1]) == n.word {
			return true
		}
	}
	return false
}

// postTimes yields the posts' times, spread over the year before
// seedReference, in ascending order, so ids follow time. It draws the
// sorted sample directly, one value at a time (the largest of k uniform
// values is U^(1/k)), instead of drawing them all and sorting.
func (g *generator) postTimes() iter.Seq[time.Time] {
	return func(yield func(time.Time) bool) {
		r := g.rand(streamPostTimes)
		start := seedReference.Add(-year)
		largest := 1.0 // of the values not yet yielded, counted down from the top
		for k := g.cfg.Posts; k >= 1; k-- {
			largest *= math.Pow(1-r.Float64(), 1/float64(k))
			// 1 - largest runs upwards as largest runs down.
			t := start.Add(time.Duration((1 - largest) * float64(year))).Truncate(time.Second)
			if !yield(t) {
				return
			}
		}
	}
}

// commentCounts yields how many comments each post gets, in post order.
func (g *generator) commentCounts() iter.Seq[int] {
	return func(yield func(int) bool) {
		r := g.rand(streamCommentCounts)
		for range g.cfg.Posts {
			if !yield(g.cfg.MinComments + r.IntN(g.cfg.MaxComments-g.cfg.MinComments+1)) {
				return
			}
		}
	}
}

// posts yields the posts in time order, each with a title no other has
// nor looks like.
func (g *generator) posts(yield func(*loremnews.Post) bool) {
	r := g.rand(streamPosts)
	lorem := NewLorem(g.cfg.Seed + 2)
	titles := newTitleSet(g.cfg.Posts)
	id := int64(0)
	for t := range g.postTimes() {
		id++
		title := drawTitle(lorem, titles)
		t = t.Add(g.shift)
		p := &loremnews.Post{
			ID:          id,
			UserID:      int64(1 + r.IntN(g.cfg.Users)),
			Title:       title,
			Description: lorem.Paragraphs(5 + r.IntN(6)),
			PublishedAt: t,
			CreatedAt:   t,
			UpdatedAt:   t,
		}
		if !yield(p) {
			return
		}
	}
}

// drawTitle draws a title no earlier one of titles has, by look-alike key
// (loremnews.ConfusableKey: "Nisi" and "Nisl" have one key, as i reads as
// l, and two titles that differ only there come up within about 100,000
// posts). The stores compare titles by loremnews.TitleKey, which is finer,
// so the titles are unique by it too; drawing by the look-alike key keeps
// the data set what it has been for every seed.
func drawTitle(lorem *Lorem, titles *titleSet) string {
	title := lorem.Title()
	for len(title) < loremnews.MinTitleLen || !titles.add(loremnews.ConfusableKey(title)) {
		title = lorem.Title()
	}
	return title
}

// comments yields the comments in time order (then by post), ids from 1.
// It replays the post times; each post's comments are drawn when the
// replay reaches it and wait in a heap until no later post can come before
// them. A comment comes after its post, within maxCommentDelay, and before
// now.
func (g *generator) comments(yield func(*loremnews.Comment) bool) {
	r := g.rand(streamComments)
	lorem := NewLorem(g.cfg.Seed + 3)
	counts, stop := iter.Pull(g.commentCounts())
	defer stop()
	var due pendingComments
	id := int64(0)
	// emit yields, with bodies, the waiting comments at or before limit
	// (those at limit belong to earlier posts, so they come first).
	emit := func(limit time.Time) bool {
		for len(due) > 0 && !due[0].at.After(limit) {
			c := heap.Pop(&due).(pendingComment)
			id++
			at := c.at.Add(g.shift)
			if !yield(&loremnews.Comment{ID: id, PostID: c.post, UserID: c.user, Body: lorem.Paragraph(), CreatedAt: at, UpdatedAt: at}) {
				return false
			}
		}
		return true
	}
	post := int64(0)
	for t := range g.postTimes() {
		if !emit(t) {
			return
		}
		post++
		n, _ := counts()
		span := min(maxCommentDelay, seedReference.Sub(t))
		for i := range n {
			// Squared, so most comments come soon after the post.
			u := r.Float64()
			at := t.Add(time.Duration(u * u * float64(span))).Truncate(time.Second)
			heap.Push(&due, pendingComment{at: at, post: post, seq: i, user: int64(1 + r.IntN(g.cfg.Users))})
		}
	}
	emit(seedReference)
}

// pendingComment is a drawn comment waiting for its turn; its body is
// written when it is emitted.
type pendingComment struct {
	at   time.Time
	post int64
	seq  int // breaks ties within a post, for a total, repeatable order
	user int64
}

// pendingComments is a min-heap by (time, post, seq).
type pendingComments []pendingComment

func (h pendingComments) Len() int { return len(h) }
func (h pendingComments) Less(i, j int) bool {
	a, b := h[i], h[j]
	if c := a.at.Compare(b.at); c != 0 {
		return c < 0
	}
	if a.post != b.post {
		return a.post < b.post
	}
	return a.seq < b.seq
}
func (h pendingComments) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pendingComments) Push(x any)   { *h = append(*h, x.(pendingComment)) }
func (h *pendingComments) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
