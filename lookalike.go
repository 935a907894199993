package loremnews

import (
	"strings"

	"github.com/mtibben/confusables"
	"golang.org/x/text/unicode/norm"
)

// NameKeys are what a screen name is compared with others by: the
// skeleton (what it looks like) of the name as it is shown, and of the
// name in small letters and in capitals. Screen names are one account
// whatever their case ("Alice" signs in as "alice"), so a name that, as
// shown, looks like another name in any of its cases reads as that
// account: "5AM5ON" as "SAMSON", which is "samson". Names are compared as
// they are shown, not folded first: "Ian" looks like "lan", but "ian"
// does not, nor "sami" like "sam1".
//
// The skeleton is Unicode's (UTS #39, github.com/mtibben/confusables:
// 1 and I read as l, m as rn) with what it lacks for the letters, digits
// and '_', '-', '.' a screen name may hold: w reads as vv, 0 and O as o, 5
// as S, 8 as B; a run of one of '_', '-', '.' reads as one ("john__doe" as
// "john_doe"); and a name's leading and trailing '_', '-' and '.' are not
// part of it ("oliver." and "sophia_" read as "oliver" and "sophia").
// Pairs of letters that only some fonts draw alike are left apart, as
// they are common in names that differ: nn is not m (Anna and Ama, Quinn
// and Quim), cl is not d (clay and day).
type NameKeys struct {
	Shown, Small, Capitals string
}

// ScreenNameKeys are name's keys.
func ScreenNameKeys(name string) NameKeys {
	return NameKeys{
		Shown:    nameSkeleton(name),
		Small:    nameSkeleton(strings.ToLower(name)),
		Capitals: nameSkeleton(strings.ToUpper(name)),
	}
}

// LookAlike reports whether two names, by their keys, read as one: either
// as shown looks like the other in some case. (Two names that differ only
// in case are one account; the stores compare those without case.)
func (k NameKeys) LookAlike(other NameKeys) bool {
	return k.Shown == other.Shown || k.Shown == other.Small || k.Shown == other.Capitals ||
		other.Shown == k.Small || other.Shown == k.Capitals
}

// nameSkeleton is the skeleton of a screen name, case kept.
func nameSkeleton(name string) string {
	name = strings.Trim(name, "_-.")
	var b strings.Builder
	b.Grow(len(name) + 4)
	var last rune
	for _, r := range name {
		separator := r == '_' || r == '-' || r == '.'
		if separator && r == last {
			continue
		}
		last = r
		switch r {
		case 'w':
			b.WriteString("vv")
		case 'W':
			b.WriteString("VV")
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

// TitleKey is what titles are compared by. Titles are not identities: two
// titles are one when they differ only in case, in white space (a run of
// it is one space, none at either end) or in Unicode compatibility forms
// (full-width letters, ligatures: NFKC); titles that merely look alike
// ("Chapter II" and "Chapter 11", "Modem" and "Modern") are two.
func TitleKey(title string) string {
	if isASCII(title) {
		// NFKC leaves ASCII as it is, and folding it is lowering it: the
		// same key without Unicode's tables (TestTitleKeyOfASCII).
		return collapseSpace(strings.ToLower(title))
	}
	return collapseSpace(fold(norm.NFKC.String(title)))
}

// ScreenNameTaken is the error for a screen name refused because other,
// an account's name, reads as it (or is it, in another case).
func ScreenNameTaken(name, other string) error {
	if strings.EqualFold(name, other) {
		return Errorf(EINVALID, "Screen name has already been taken.")
	}
	return Errorf(EINVALID, "Screen name reads as %s, which is taken.", other)
}
