package loremnews

import (
	"strings"
	"time"
	"unicode/utf8"
)

// User is a member of the site. PostsCount is a counter cache kept equal to
// the number of the user's posts by the store, in the same transaction as the
// rows it counts, so pages never need a COUNT query.
type User struct {
	ID             int64
	ScreenName     string
	PasswordDigest string
	About          string
	LastSeenAt     time.Time
	PostsCount     int
	CreatedAt      time.Time
	UpdatedAt      time.Time

	// CommentsCount is the number of the user's comments, filled in only by
	// UserPage, which counts them in the snapshot it lists them from. It is
	// counted, not cached: a cached count would add a write on every other
	// user's row each time a post's comments go with the post.
	CommentsCount int
}

// SignUpInput is the sign-up form.
type SignUpInput struct {
	ScreenName string
	Password   string
}

// Normalize trims the screen name; passwords are taken as typed.
func (in *SignUpInput) Normalize() { in.ScreenName = strings.TrimSpace(in.ScreenName) }

// Validate reports the first rule the input breaks as an EINVALID error.
func (in SignUpInput) Validate() error {
	if err := ValidateScreenName(in.ScreenName); err != nil {
		return err
	}
	return ValidatePassword(in.Password)
}

// ProfileInput is what a user may change on their own account. An empty
// Password leaves the password unchanged.
type ProfileInput struct {
	ScreenName string
	About      string
	Password   string
}

// Normalize trims the text fields.
func (in *ProfileInput) Normalize() {
	in.ScreenName = strings.TrimSpace(in.ScreenName)
	in.About = strings.TrimSpace(in.About)
}

// Validate reports the first rule the input breaks as an EINVALID error.
func (in ProfileInput) Validate() error {
	if err := ValidateScreenName(in.ScreenName); err != nil {
		return err
	}
	if !utf8.ValidString(in.About) {
		return Errorf(EINVALID, "About is not valid UTF-8 text.")
	}
	if hasControl(in.About, true) {
		return Errorf(EINVALID, "About contains control characters.")
	}
	if utf8.RuneCountInString(in.About) > MaxAboutLen {
		return Errorf(EINVALID, "About is too long (maximum is %d characters).", MaxAboutLen)
	}
	if in.Password != "" {
		return ValidatePassword(in.Password)
	}
	return nil
}

// ValidateScreenName allows letters, digits, '_', '-' and '.', so a screen
// name is always safe in a URL, a log line and a page title.
func ValidateScreenName(name string) error {
	if err := (textField{name: "Screen name", min: MinScreenNameLen, max: MaxScreenNameLen}).check(name); err != nil {
		return err
	}
	for _, r := range name {
		if !(r == '_' || r == '-' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return Errorf(EINVALID, "Screen name may only contain letters, digits, '_', '-' and '.'.")
		}
	}
	return nil
}

// ValidatePassword enforces the length rules bcrypt needs.
func ValidatePassword(pw string) error {
	if utf8.RuneCountInString(pw) < MinPasswordLen { // characters, as the message says: "€€€" is 9 bytes but 3 characters
		return Errorf(EINVALID, "Password is too short (minimum is %d characters).", MinPasswordLen)
	}
	if len(pw) > MaxPasswordLen {
		return Errorf(EINVALID, "Password is too long (maximum is %d bytes).", MaxPasswordLen)
	}
	return nil
}
