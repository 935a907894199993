package seed

import (
	"slices"
	"time"

	"github.com/loremnews/loremnews"
)

func sortTimes(ts []time.Time) { slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) }) }

// sortComments orders comments by time, then post, for stable ids.
func sortComments(cs []*loremnews.Comment) {
	slices.SortStableFunc(cs, func(a, b *loremnews.Comment) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return int(a.PostID - b.PostID)
	})
}
