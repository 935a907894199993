package loremnews_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/loremnews/loremnews"
)

func TestValidation(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		want string // "" = valid
	}{
		"post ok":            {loremnews.PostInput{Title: "Hello"}.Validate(), ""},
		"post short":         {loremnews.PostInput{Title: "Hey"}.Validate(), "Title is too short (minimum is 5 characters)."},
		"post blank":         {normalizedPost("   ", "").Validate(), "Title can't be blank."},
		"post long":          {loremnews.PostInput{Title: strings.Repeat("x", 201)}.Validate(), "Title is too long"},
		"post runes":         {loremnews.PostInput{Title: "héllo"}.Validate(), ""},
		"post bad utf8":      {loremnews.PostInput{Title: "bad \xff title"}.Validate(), "Title is not valid UTF-8 text."},
		"title NUL":          {loremnews.PostInput{Title: "000\x000"}.Validate(), "Title contains control characters."},
		"title newline":      {loremnews.PostInput{Title: "two\nlines"}.Validate(), "Title contains control characters."},
		"description lines":  {loremnews.PostInput{Title: "Hello", Description: "a\n\nb\tc"}.Validate(), ""},
		"description NUL":    {loremnews.PostInput{Title: "Hello", Description: "a\x00b"}.Validate(), "Description contains control characters."},
		"comment NUL":        {loremnews.CommentInput{Body: "hello\x00"}.Validate(), "Comment contains control characters."},
		"description long":   {loremnews.PostInput{Title: "Hello", Description: strings.Repeat("x", 20_001)}.Validate(), "Description is too long"},
		"comment short":      {loremnews.CommentInput{Body: "abcd"}.Validate(), "Comment is too short"},
		"comment ok":         {loremnews.CommentInput{Body: "abcde"}.Validate(), ""},
		"signup ok":          {loremnews.SignUpInput{ScreenName: "ann_1.x", Password: "12345678"}.Validate(), ""},
		"signup short pw":    {loremnews.SignUpInput{ScreenName: "ann", Password: "1234567"}.Validate(), "Password is too short"},
		"signup pw chars":    {loremnews.SignUpInput{ScreenName: "ann", Password: "€€€"}.Validate(), "Password is too short (minimum is 8 characters)."},
		"signup pw 8 chars":  {loremnews.SignUpInput{ScreenName: "ann", Password: "€€€€€€€€"}.Validate(), ""},
		"signup long pw":     {loremnews.SignUpInput{ScreenName: "ann", Password: strings.Repeat("p", 73)}.Validate(), "Password is too long"},
		"signup space":       {loremnews.SignUpInput{ScreenName: "a b", Password: "12345678"}.Validate(), "may only contain"},
		"signup html":        {loremnews.SignUpInput{ScreenName: "<b>", Password: "12345678"}.Validate(), "may only contain"},
		"profile no pw":      {loremnews.ProfileInput{ScreenName: "ann"}.Validate(), ""},
		"profile short pw":   {loremnews.ProfileInput{ScreenName: "ann", Password: "x"}.Validate(), "Password is too short"},
		"profile long about": {loremnews.ProfileInput{ScreenName: "ann", About: strings.Repeat("a", 2001)}.Validate(), "About is too long"},
		"title RLO":          {loremnews.PostInput{Title: "My holiday \u202egpj.exe"}.Validate(), "Title contains invisible or text-direction characters."},
		"title RLI":          {loremnews.PostInput{Title: "Hello \u2067world\u2069"}.Validate(), "invisible or text-direction"},
		"title LRM":          {loremnews.PostInput{Title: "Hello\u200e world"}.Validate(), "invisible or text-direction"},
		"title zero width":   {loremnews.PostInput{Title: "Hel\u200blo world"}.Validate(), "invisible or text-direction"},
		"title ZWJ":          {loremnews.PostInput{Title: "Hello\u200dworld"}.Validate(), "invisible or text-direction"},
		"title BOM":          {loremnews.PostInput{Title: "\ufeffHello world"}.Validate(), "invisible or text-direction"},
		"title word joiner":  {loremnews.PostInput{Title: "Hello\u2060world"}.Validate(), "invisible or text-direction"},
		"title arabic ok":    {loremnews.PostInput{Title: "مرحبا بالعالم"}.Validate(), ""},
		// Characters every reader sees as nothing, or as a box: a title
		// with one is the same title to them, yet counted as new.
		"title khitan filler":           {loremnews.PostInput{Title: "Hello world\U00016FE4"}.Validate(), "invisible or text-direction"},
		"title private use after words": {loremnews.PostInput{Title: "Hello world\uE000"}.Validate(), "Title contains private-use or unassigned characters"},
		"title private use, plane 15":   {loremnews.PostInput{Title: "Hello world\U000F0000"}.Validate(), "private-use or unassigned"},
		"title unassigned":              {loremnews.PostInput{Title: "Hello world\u0378"}.Validate(), "private-use or unassigned"},
		"name RLO":                      {loremnews.SignUpInput{ScreenName: "ann\u202e", Password: "12345678"}.Validate(), "Screen name contains invisible"},
		"name zero width":               {loremnews.ProfileInput{ScreenName: "a\u200bnn"}.Validate(), "Screen name contains invisible"},
		"comment ZWJ ok":                {loremnews.CommentInput{Body: "family: \U0001F468\u200d\U0001F469"}.Validate(), ""},
		// Format characters, default-ignorables and separators beyond the
		// bidirectional and zero-width ones above.
		"title invisible times":           {loremnews.PostInput{Title: "Hello\u2062world"}.Validate(), "invisible or text-direction"},
		"title tag characters":            {loremnews.PostInput{Title: "Hello world\U000E0041\U000E0042\U000E007F"}.Validate(), "invisible or text-direction"},
		"title hangul filler":             {loremnews.PostInput{Title: "Hello\u3164world"}.Validate(), "invisible or text-direction"},
		"title line separator":            {loremnews.PostInput{Title: "Hello\u2028world"}.Validate(), "invisible or text-direction"},
		"title para separator":            {loremnews.PostInput{Title: "Hello\u2029world"}.Validate(), "invisible or text-direction"},
		"title variation sel":             {loremnews.PostInput{Title: "Hello\ufe0f world"}.Validate(), "invisible or text-direction"},
		"title CGJ":                       {loremnews.PostInput{Title: "Hel\u034flo world"}.Validate(), "invisible or text-direction"},
		"name tag characters":             {loremnews.ProfileInput{ScreenName: "ann\U000E0041"}.Validate(), "Screen name contains invisible"},
		"title zalgo":                     {loremnews.PostInput{Title: "He" + strings.Repeat("\u0301", 5) + "llo world"}.Validate(), "too many accents or marks on one character (at most 4)"},
		"title marks spread ok":           {loremnews.PostInput{Title: "He\u0301\u0302l\u0303l\u0304o\u0323\u0302\u0301\u0300 world"}.Validate(), ""},
		"title braille blanks":            {loremnews.PostInput{Title: strings.Repeat("\u2800", 6)}.Validate(), "Title contains invisible or text-direction characters."},
		"title null notehead":             {loremnews.PostInput{Title: strings.Repeat("\U0001D159", 5)}.Validate(), "Title contains invisible or text-direction characters."},
		"title braille blank after words": {loremnews.PostInput{Title: "Hello world\u2800"}.Validate(), "Title contains invisible or text-direction characters."},
		"title private use":               {loremnews.PostInput{Title: strings.Repeat("\ue000", 5)}.Validate(), "Title contains private-use or unassigned characters"},
		"title digits ok":                 {loremnews.PostInput{Title: "2026 !"}.Validate(), ""},
		"title vietnamese ok":             {loremnews.PostInput{Title: "Tiếng Việt có dấu"}.Validate(), ""},
		"description keeps them":          {loremnews.PostInput{Title: "Hello", Description: "a\u2062b \u3164 " + strings.Repeat("\u0301", 9)}.Validate(), ""},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.want == "" {
				if tc.err != nil {
					t.Fatalf("got %v, want valid", tc.err)
				}
				return
			}
			if loremnews.ErrorCode(tc.err) != loremnews.EINVALID || !strings.Contains(loremnews.ErrorMessage(tc.err), tc.want) {
				t.Fatalf("got %v, want EINVALID %q", tc.err, tc.want)
			}
		})
	}
}

// TestTitlesNormalizedToNFKC: titles that look alike are stored as one
// spelling (NFKC), so the unique index compares what readers see.
func TestTitlesNormalizedToNFKC(t *testing.T) {
	for in, want := range map[string]string{
		"Ｈｅｌｌｏ world":       "Hello world",    // full-width letters
		"\ufb01nal answer":  "final answer",   // the ligature ﬁ
		"Top \u2460 reason": "Top 1 reason",   // circled digit
		"Cafe\u0301 menu":   "Caf\u00e9 menu", // decomposed accent
		"  Plain title  ":   "Plain title",
	} {
		if got := normalizedPost(in, "").Title; got != want {
			t.Errorf("%q normalised to %q, want %q", in, got, want)
		}
	}
}

func normalizedPost(title, desc string) loremnews.PostInput {
	in := loremnews.PostInput{Title: title, Description: desc}
	in.Normalize()
	return in
}

func TestErrorCodeAndMessage(t *testing.T) {
	wrapped := fmt.Errorf("find post 3: %w", loremnews.Errorf(loremnews.ENOTFOUND, "Post not found."))
	if loremnews.ErrorCode(wrapped) != loremnews.ENOTFOUND || loremnews.ErrorMessage(wrapped) != "Post not found." {
		t.Fatalf("wrapped: %q %q", loremnews.ErrorCode(wrapped), loremnews.ErrorMessage(wrapped))
	}
	internal := errors.New("disk I/O error at /secret/path")
	if loremnews.ErrorCode(internal) != loremnews.EINTERNAL || strings.Contains(loremnews.ErrorMessage(internal), "secret") {
		t.Fatalf("internal error leaks: %q", loremnews.ErrorMessage(internal))
	}
	if loremnews.ErrorCode(nil) != "" || loremnews.ErrorMessage(nil) != "" {
		t.Fatal("nil error has a code")
	}
}

func TestDatasetTrueCounts(t *testing.T) {
	ds := &loremnews.Dataset{
		Users: []*loremnews.User{{ID: 1}, {ID: 2}, {ID: 3}},
		Posts: []*loremnews.Post{{ID: 10, UserID: 1}, {ID: 11, UserID: 1}, {ID: 12, UserID: 2}},
		Comments: []*loremnews.Comment{
			{ID: 100, PostID: 10}, {ID: 101, PostID: 10}, {ID: 102, PostID: 12}, {ID: 103, PostID: 10},
		},
	}
	posts, comments := ds.TrueCounts()
	if posts[1] != 2 || posts[2] != 1 || posts[3] != 0 || len(posts) != 2 {
		t.Errorf("posts by user = %v", posts)
	}
	if comments[10] != 3 || comments[11] != 0 || comments[12] != 1 || len(comments) != 2 {
		t.Errorf("comments by post = %v", comments)
	}
}

// OneLineText is the rule a one-line field applies to its characters:
// what the benchmark post's description keeps of a request's headers.
func TestOneLineText(t *testing.T) {
	for s, want := range map[string]bool{
		"text/html, application/json": true,
		"fr-CH, fr;q=0.9, é":          true,
		"":                            true,
		"a\tb":                        false, // a control character
		"en\u202eSU-ne":               false, // a text-direction override
		"zero\u200bwidth":             false,
		"Z" + strings.Repeat("\u0301", loremnews.MaxCombiningMarks+1): false,
		"\xff\xfe": false, // not UTF-8
	} {
		if got := loremnews.OneLineText(s); got != want {
			t.Errorf("OneLineText(%q) = %v, want %v", s, got, want)
		}
	}
}
