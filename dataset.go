package loremnews

import (
	"iter"
	"slices"
)

// Dataset is every row of a database: what `seed` generates and `copy`
// moves between databases. Ids are kept as they are.
type Dataset struct {
	Users    []*User
	Posts    []*Post
	Comments []*Comment
	Sessions []*Session
}

// TrueCounts counts ds's rows for its counter caches: the posts of each
// user and the comments of each post, by id.
func (ds *Dataset) TrueCounts() (postsByUser, commentsByPost map[int64]int) {
	postsByUser, commentsByPost = map[int64]int{}, map[int64]int{}
	for _, p := range ds.Posts {
		postsByUser[p.UserID]++
	}
	for _, c := range ds.Comments {
		commentsByPost[c.PostID]++
	}
	return postsByUser, commentsByPost
}

// Stream yields ds's rows one at a time, in the order of its slices.
func (ds *Dataset) Stream() DatasetStream {
	return DatasetStream{
		Users:    slices.Values(ds.Users),
		Posts:    slices.Values(ds.Posts),
		Comments: slices.Values(ds.Comments),
		Sessions: slices.Values(ds.Sessions),
	}
}

// DatasetStream is a data set read one row at a time, so a store can load
// any number of rows in memory that does not grow with them. A store reads
// every user, then every post, then every comment, then every session (a
// row's parents are always written before it), each sequence once; a nil
// sequence has no rows. A store keeps no row after asking for the next.
type DatasetStream struct {
	Users    iter.Seq[*User]
	Posts    iter.Seq[*Post]
	Comments iter.Seq[*Comment]
	Sessions iter.Seq[*Session]
}

// Consistency is what Database.CheckConsistency found.
type Consistency struct {
	Integrity          string // the engine's own check: "ok" when sound
	ForeignKeyErrors   int    // rows referencing a missing parent
	WrongPostsCounts   int    // users whose posts_count differs from their posts
	WrongCommentCounts int    // posts whose comments_count differs from their comments
	Users, Posts       int
	Comments, Sessions int
}

// OK reports whether every check passed.
func (c Consistency) OK() bool {
	return c.Integrity == "ok" && c.ForeignKeyErrors == 0 && c.WrongPostsCounts == 0 && c.WrongCommentCounts == 0
}
