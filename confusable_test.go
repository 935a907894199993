package loremnews

import (
	"strings"
	"testing"
	"unicode"
)

func TestConfusableKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b string
		same bool
	}{
		// The finding's cases.
		{"capital i for l", "Ieo5", "leo5", true},
		{"rn for m", "rnagna4", "magna4", true},
		{"Cyrillic е", "Tеst title", "Test title", true},
		{"Cyrillic а е о", "Lоrеm аmet", "Lorem amet", true},
		{"double space", "Test  title", "Test title", true},
		{"other white space", "Test\u00a0\ttitle", "Test title", true},
		{"space at the ends", "  Test title ", "Test title", true},
		{"lower case", "test title", "Test title", true},
		{"upper case", "TEST TITLE", "Test title", true},
		{"case of a name", "CAROL", "carol", true},
		// What the library's skeleton knows besides.
		{"digit one for l", "1eo5", "leo5", true},
		{"digit zero for o", "b0b", "bob", true},
		{"full-width", "Ｔｅｓｔ title", "Test title", true},
		{"small i as l, once folded", "ieo5", "leo5", true},
		{"capital I beside capital L", "IEO5", "LEO5", true},
		// What the key adds on top: capitals that only look alike as capitals.
		{"Cyrillic capital Т", "Тest title", "Test title", true},
		{"Cyrillic capital В", "Вob", "Bob", true},
		{"Cyrillic small г stays r", "гaw", "raw", true},
		// Genuinely different names and titles stay different.
		{"anna and anne", "anna", "anne", false},
		{"alice and bob", "alice", "bob", false},
		{"another number", "leo5", "leo6", false},
		{"magna and magma", "magna4", "magma4", false},
		{"another word", "Test title", "Best title", false},
		{"an accent", "café", "cafe", false},
		{"a space is not nothing", "Test title", "Testtitle", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ka, kb := ConfusableKey(tc.a), ConfusableKey(tc.b)
			if (ka == kb) != tc.same {
				t.Fatalf("ConfusableKey(%q) = %q, ConfusableKey(%q) = %q; same = %v, want %v", tc.a, ka, tc.b, kb, ka == kb, tc.same)
			}
			for _, s := range []string{tc.a, tc.b} {
				if k := ConfusableKey(s); ConfusableKey(k) != k {
					t.Fatalf("ConfusableKey(%q) = %q, but its key is %q", s, k, ConfusableKey(k))
				}
			}
		})
	}
}

// TestConfusableKeyIsIdempotent: for every character, alone and between
// others, the key's key is the key, reached in fewer rounds than the
// bound (a round leaves it as it is), and the upper- and lower-case
// forms have the same key.
func TestConfusableKeyIsIdempotent(t *testing.T) {
	n := 0
	for r := range unicode.MaxRune + 1 {
		if !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z) {
			continue
		}
		for _, s := range []string{string(r), "x" + string(r) + " Y"} {
			k := ConfusableKey(s)
			if again := confusableRound(k); again != k {
				n++
				t.Errorf("%U: ConfusableKey(%q) = %q has not settled: a round more makes it %q", r, s, k, again)
			}
			if up, low := ConfusableKey(strings.ToUpper(s)), ConfusableKey(strings.ToLower(s)); up != k || low != k {
				n++
				t.Errorf("%U: ConfusableKey(%q) = %q, of its upper case %q, of its lower case %q", r, s, k, up, low)
			}
			if n > 20 {
				t.Fatal("too many")
			}
		}
	}
}
