package loremnews

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

func TestScreenNamesLookAlike(t *testing.T) {
	for _, tc := range []struct {
		taken, name string
		alike       bool
	}{
		// Look-alikes: a letter or two for others that read the same.
		{"wendy", "vvendy", true},
		{"magnus", "rnagnus", true},
		{"john_doe", "john__doe", true},
		{"john.doe", "john...doe", true},
		{"oliver", "oliver.", true},
		{"sophia", "sophia_", true},
		{"sophia", "-sophia", true},
		{"samson", "5AM5ON", true}, // reads as SAMSON
		{"bob", "8O8", true},       // reads as BOB
		{"lan", "Ian", true},       // a capital i
		{"leo5", "Ieo5", true},
		{"leo5", "1eo5", true},
		{"leo5", "le05", true},
		{"LEO5", "leos", true}, // LEO5 reads as LEOS
		{"leos", "LEO5", true}, // reads as LEOS
		{"user10", "userIO", true},
		{"alice", "ALICE", true}, // one account
		// Ordinary names that do not look alike as they are shown.
		{"sam1", "sami", false},
		{"all", "ali", false},
		{"lan", "ian", false},
		{"flim", "film", false},
		{"userio", "user10", false},
		{"leo5", "leos", false},
		{"anna", "anne", false},
		{"magna4", "magma4", false},
		{"john_doe", "john-doe", false},
		// Pairs of letters only some fonts draw alike: names, not look-alikes.
		{"Quinn", "Quim", false},
		{"Anna", "Ama", false},
		{"Finn", "Fim", false},
		{"Glenn", "Glem", false},
		{"magnus", "nnagnus", false},
		{"clay", "day", false},
		{"Clay", "Day", false},
		{"dave", "clave", false},
	} {
		a, b := ScreenNameKeys(tc.taken), ScreenNameKeys(tc.name)
		if got := b.LookAlike(a); got != tc.alike {
			t.Errorf("%q beside %q: look alike = %v, want %v (keys %+v, %+v)", tc.name, tc.taken, got, tc.alike, b, a)
		}
		if b.LookAlike(a) != a.LookAlike(b) {
			t.Errorf("%q and %q: LookAlike is not symmetric", tc.name, tc.taken)
		}
	}
}

func TestTitleKey(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"Test title", "test  TITLE ", true},
		{"Test title", "Ｔｅｓｔ title", true}, // full-width
		{"Test title", "Test\u00a0\ttitle", true},
		{"Chapter 11", "Chapter II", false},
		{"Modern times", "Modem times", false},
		{"World War II", "World War 11", false},
		{"Test title", "Tеst title", false}, // a Cyrillic е: another title
	} {
		if got := TitleKey(tc.a) == TitleKey(tc.b); got != tc.same {
			t.Errorf("TitleKey(%q) = %q, TitleKey(%q) = %q: same = %v, want %v", tc.a, TitleKey(tc.a), tc.b, TitleKey(tc.b), got, tc.same)
		}
	}
}

// TestNoASCIIIsInvisibleOrAMark holds hasInvisible's and stacksMarks's
// shortcut for ASCII to Unicode's tables: no ASCII character is a format
// character, default-ignorable, a variation selector, a line or paragraph
// separator, or a mark, so skipping them changes no answer.
func TestNoASCIIIsInvisibleOrAMark(t *testing.T) {
	for r := rune(0); r < 0x80; r++ {
		if unicode.In(r, unicode.Cf, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector, unicode.Zl, unicode.Zp, unicode.M) {
			t.Errorf("%U is in one of the tables hasInvisible or stacksMarks skips ASCII for", r)
		}
	}
	if !hasInvisible("ab\u200bc") || hasInvisible("plain ASCII, tabs\tand all ~") {
		t.Error("hasInvisible: wrong answer around the ASCII shortcut")
	}
	if !stacksMarks("a"+strings.Repeat("\u0301", MaxCombiningMarks+1)) || stacksMarks("a\u0301b\u0301c") {
		t.Error("stacksMarks: wrong answer around the ASCII shortcut")
	}
}

// TestTitleKeyOfASCII holds TitleKey's shortcut for ASCII titles to the
// whole way (NFKC, fold, collapse): every ASCII character alone, between
// letters and spaces, and random ASCII strings.
func TestTitleKeyOfASCII(t *testing.T) {
	whole := func(s string) string { return collapseSpace(fold(norm.NFKC.String(s))) }
	check := func(s string) {
		if got, want := TitleKey(s), whole(s); got != want {
			t.Errorf("TitleKey(%q) = %q, want %q", s, got, want)
		}
	}
	for r := rune(0); r < utf8.RuneSelf; r++ {
		check(string(r))
		check(" Ab" + string(r) + "Cd  E\t")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(utf8.RuneSelf))
		}
		check(string(b))
	}
}
