package loremnews

import (
	"strings"
	"time"

	"golang.org/x/text/unicode/norm"
)

// Post is a story submitted by a user. CommentsCount is a counter cache, like
// User.PostsCount. Author (its ID and ScreenName only) is filled in by the
// store for the pages that show it, for a whole listing at once, never a
// query per row.
type Post struct {
	ID            int64
	UserID        int64
	Title         string
	Description   string
	PublishedAt   time.Time
	CommentsCount int
	CreatedAt     time.Time
	UpdatedAt     time.Time

	Author *User
}

// PostInput is what a user may set on a post.
type PostInput struct {
	Title       string
	Description string
}

// Normalize trims surrounding space, so "   " counts as empty, and puts
// the title in Unicode's NFKC form: titles must be unique, and characters
// that look alike (full-width "Ｈｅｌｌｏ", the ligature "ﬁ", "①") are
// stored as the one spelling they look like, so the database's unique
// index compares what readers see.
func (in *PostInput) Normalize() {
	in.Title = strings.TrimSpace(norm.NFKC.String(in.Title))
	in.Description = strings.TrimSpace(in.Description)
}

// Validate reports the first rule the input breaks as an EINVALID error.
func (in PostInput) Validate() error {
	if err := ValidateTitle(in.Title); err != nil {
		return err
	}
	return ValidateDescription(in.Description)
}

// ValidateTitle checks a post's title alone, so a form can report it
// beside the title field along with any other field's problem.
func ValidateTitle(title string) error {
	return textField{name: "Title", visible: true, min: MinTitleLen, max: MaxTitleLen}.check(title)
}

// ValidateDescription checks a post's description alone.
func ValidateDescription(d string) error {
	return textField{name: "Description", multiline: true, optional: true, max: MaxDescriptionLen}.check(d)
}
