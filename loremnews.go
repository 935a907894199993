// Package loremnews holds the domain of Lorem News — a Hacker-News-style site of
// users, posts and comments — as plain types, their validation rules and the
// store interface that the database packages (sqlite/ and postgres/)
// implement. It imports nothing of HTTP or SQL, so every other package can
// depend on it.
package loremnews

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Validation limits. The minimum title and body lengths are also CHECK
// constraints in both stores' schemas; maximums keep one request from
// storing megabytes in a text column.
const (
	MinTitleLen       = 5
	MaxTitleLen       = 200
	MaxDescriptionLen = 20_000
	MinBodyLen        = 5
	MaxBodyLen        = 10_000
	MinScreenNameLen  = 2
	MaxScreenNameLen  = 40
	MaxAboutLen       = 2_000
	MinPasswordLen    = 8
	MaxPasswordLen    = 72 // bcrypt ignores bytes beyond 72; refuse rather than truncate silently
)

// textField is a text input's rules. Every text input shares these, so
// each form reports them in the same words: valid UTF-8, no control
// characters, for one-line fields no invisible characters and no stacked
// marks, and the length limits, counted in characters.
type textField struct {
	name      string // as the messages name it
	multiline bool   // free text: newlines and tabs allowed, invisible characters and marks not checked
	optional  bool   // may be empty
	visible   bool   // must hold a letter or a digit, so it cannot render blank
	min, max  int    // length limits, in characters
}

// OneLineText reports whether s is text a one-line field (a title, a
// screen name) takes, its length aside: valid UTF-8, with no control or
// invisible characters and no stacked marks.
func OneLineText(s string) bool {
	return utf8.ValidString(s) && !hasControl(s, false) && !hasInvisible(s) && !hasUnassigned(s) && !stacksMarks(s)
}

// check answers the first rule s breaks, as an EINVALID error, or nil.
func (f textField) check(s string) error {
	if !utf8.ValidString(s) {
		return Errorf(EINVALID, "%s is not valid UTF-8 text.", f.name)
	}
	if hasControl(s, f.multiline) {
		return Errorf(EINVALID, "%s contains control characters.", f.name)
	}
	if !f.multiline && hasInvisible(s) {
		return Errorf(EINVALID, "%s contains invisible or text-direction characters.", f.name)
	}
	if !f.multiline && hasUnassigned(s) {
		return Errorf(EINVALID, "%s contains private-use or unassigned characters, which show differently on every device, or not at all.", f.name)
	}
	if !f.multiline && stacksMarks(s) {
		return Errorf(EINVALID, "%s stacks too many accents or marks on one character (at most %d).", f.name, MaxCombiningMarks)
	}
	n := utf8.RuneCountInString(s)
	if f.visible && n > 0 && !strings.ContainsFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }) {
		// Braille blanks (U+2800), a null notehead (U+1D159) or
		// private-use characters render as nothing, or as a box.
		return Errorf(EINVALID, "%s needs at least one letter or digit.", f.name)
	}
	switch {
	case n == 0 && f.optional:
		return nil
	case n == 0:
		return Errorf(EINVALID, "%s can't be blank.", f.name)
	case n < f.min:
		return Errorf(EINVALID, "%s is too short (minimum is %d characters).", f.name, f.min)
	case n > f.max:
		return Errorf(EINVALID, "%s is too long (maximum is %d characters).", f.name, f.max)
	}
	return nil
}

// hasControl reports whether s holds control characters: NUL (which SQLite's
// length() and many tools treat as the end of the text) and the other C0
// and C1 controls. Multi-line fields may hold newlines and tabs.
func hasControl(s string, multiline bool) bool {
	for _, r := range s {
		if multiline && (r == '\n' || r == '\r' || r == '\t') {
			continue
		}
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return true
		}
	}
	return false
}

// hasInvisible reports whether s holds characters that change how the
// text around them reads without being seen, or are not seen at all:
// Unicode's format characters (Cf: bidirectional overrides, embeddings,
// isolates and marks, which can make "gpj.exe" show as "exe.jpg";
// zero-width spaces and joiners; invisible operators such as U+2062; tag
// characters), the other default-ignorable code points (the Hangul
// fillers such as U+3164, variation selectors), and the line and
// paragraph separators U+2028 and U+2029. With them two titles or names
// that differ look alike. One-line fields — titles, screen names —
// refuse them; comments and descriptions keep them, as right-to-left
// text and emoji sequences need them.
func hasInvisible(s string) bool {
	for _, r := range s {
		if r < utf8.RuneSelf {
			continue // no ASCII character is in these categories
		}
		if unicode.In(r, unicode.Cf, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector, unicode.Zl, unicode.Zp) ||
			r == brailleBlank || r == nullNotehead || r == khitanFiller {
			return true
		}
	}
	return false
}

// Characters that are neither format characters nor default-ignorable but
// show as nothing: a title "Hello world" followed by either reads as
// "Hello world".
const (
	brailleBlank = '\u2800'
	nullNotehead = '\U0001D159'
	// khitanFiller (U+16FE4) is a filler that draws nothing, as the
	// Hangul fillers do, but a nonspacing mark in the Unicode tables
	// this program has (15.0), not default-ignorable.
	khitanFiller = '\U00016FE4'
)

// hasUnassigned reports whether s holds private-use characters (Co: each
// font draws its own, or a box) or code points Unicode has not assigned
// (Cn: nothing, or a box, today; something else once assigned). With them
// a title or a name can be the same as another to every reader and still
// count as new.
func hasUnassigned(s string) bool {
	for _, r := range s {
		// Go's C holds Cn with Cc, Cf, Co and Cs.
		if r >= utf8.RuneSelf && unicode.Is(unicode.C, r) && !unicode.In(r, unicode.Cc, unicode.Cf, unicode.Cs) {
			return true
		}
	}
	return false
}

// MaxCombiningMarks is how many combining marks (accents, vowel signs,
// points) one character of a one-line field may carry. Vietnamese stacks
// two, pointed Hebrew three; "Zalgo" text stacks dozens, drawing over the
// lines around it and hiding what the text says.
const MaxCombiningMarks = 4

// stacksMarks reports whether s has a run of more than MaxCombiningMarks
// combining marks.
func stacksMarks(s string) bool {
	run := 0
	for _, r := range s {
		if r < utf8.RuneSelf || !unicode.Is(unicode.M, r) { // no ASCII mark
			run = 0
			continue
		}
		if run++; run > MaxCombiningMarks {
			return true
		}
	}
	return false
}
