package loremnews

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mtibben/confusables"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// ConfusableKey is what screen names and titles were compared by before
// NameKeys and TitleKey (the stores' migration 0004 computed it), and what
// the seed still draws its titles unique by, so its data set stays the
// same: two that look alike, folded to small letters, have the same key:
// "Ieo5" (a capital i) beside "leo5", "rnagna4" beside "magna4", "Tеst"
// with a Cyrillic е beside "Test", "Hello  world" beside "hello world".
//
// The key is the confusable skeleton of Unicode's UTS #39
// (github.com/mtibben/confusables, its confusables.txt mapping each
// character to the one it is mistaken for: m → rn, 1 and | → l, 0 → O,
// Cyrillic а е о → a e o, full-width and mathematical letters to the
// plain ones) of the case-folded text, with each run of white space made
// one space and none at either end. The skeleton alone is case-sensitive
// and, of the ASCII letters, maps only the capital I (to l); the site
// compares names and titles without case ("Alice" is "alice"), so after
// folding "Ieo5" is "ieo5", which the skeleton leaves as it is.
// confusableRunes adds what folding loses: a character takes the mapping
// of its capital when it has none of its own, or its own is not plain
// ASCII while the capital's is, so i (as I) becomes l and a Cyrillic т (as
// Т) becomes t. Where a small letter and its capital each map to a
// different plain letter (Greek ν to v, Ν to N), the small one's wins: one
// key cannot hold both. The steps repeat until the key no longer changes,
// as a skeleton can hold capitals again (0 → O), so the key of a key is
// itself.
//
// A key is for comparing, never for showing: it mixes scripts and
// changes letters ("magna4" has the key "rnagna4", "lit" and "iit" the
// same key "llt"), and names that only look alike collide, which is the
// point.
func ConfusableKey(s string) string {
	k := collapseSpace(s)
	for range maxKeyRounds {
		next := confusableRound(k)
		if next == k {
			break
		}
		k = next
	}
	return k
}

// maxKeyRounds bounds ConfusableKey's repetitions. Every character
// settles in at most three rounds that change it and one that does not
// (𝛍 becomes μ, m, then rn); TestConfusableKeyIsIdempotent checks each.
const maxKeyRounds = 8

// confusableRound is one round of ConfusableKey: fold, skeleton (with the
// capitals' mappings), fold, collapse space.
func confusableRound(s string) string {
	s = norm.NFD.String(confusableRunes(norm.NFD.String(fold(s))))
	return collapseSpace(fold(s))
}

// fold is Unicode's full case folding (cases.Fold: ß is ss, final ς is σ,
// ſ is s) of s in lower case. Lower case first, as x/text's Fold swaps the
// Cherokee letters (small to capital, capital to small), so folding alone
// would tell "Ᏹ" from "ᏹ" and never settle; lowered, both fold to one.
func fold(s string) string {
	return cases.Fold().String(strings.ToLower(s))
}

// confusableRunes maps each character of s (in NFD) to its key: its
// skeleton, unless that is not plain ASCII while its capital's skeleton is,
// or it has none of its own while its capital has one; then its
// capital's. Folding has lost the capitals the skeleton knows: i takes
// I's mapping (l), Cyrillic т and в those of Т and В (T, B) instead of
// their own (ᴛ, ʙ), so "Тest" with a Cyrillic capital is "Test". A small
// letter whose own skeleton is plain ASCII keeps it: Cyrillic г is r
// (its capital Г would be Γ).
func confusableRunes(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r < utf8.RuneSelf {
			b.WriteString(asciiKeys[r])
		} else {
			b.WriteString(runeKey(r))
		}
	}
	return b.String()
}

// asciiKeys is runeKey of every ASCII character, computed once: most
// names and titles are ASCII.
var asciiKeys = func() (keys [utf8.RuneSelf]string) {
	for r := range rune(utf8.RuneSelf) {
		keys[r] = runeKey(r)
	}
	return keys
}()

// runeKey is confusableRunes of one character.
func runeKey(r rune) string {
	one := string(r)
	own := confusables.Skeleton(one)
	up := string(unicode.ToUpper(r))
	if up == one {
		return own
	}
	capital := confusables.Skeleton(up)
	if capital != up && (own == one || !isASCII(own) && isASCII(capital)) {
		return capital
	}
	return own
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// collapseSpace makes each run of white space one space and trims both
// ends.
func collapseSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
