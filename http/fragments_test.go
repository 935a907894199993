package http

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"html"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/seed"
)

// The hand-written components must write what templ's { expr } and the
// templ components they replaced wrote.
func TestFragments(t *testing.T) {
	var b strings.Builder
	write := func(r func(*strings.Builder) error) string {
		t.Helper()
		b.Reset()
		if err := r(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}

	for _, s := range []string{"", "plain", `<script>alert("x")</script>`, "a & b 'c' \"d\" <e>", "&&", "ünïcödé · ok", "<"} {
		if got, want := write(func(w *strings.Builder) error { return text(s).Render(context.Background(), w) }), html.EscapeString(s); got != want {
			t.Errorf("text(%q) = %q, want %q (html.EscapeString)", s, got, want)
		}
	}

	// The page's clock, injected: each age is counted from it, so every
	// boundary is tested exactly, on both sides.
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	page := &basePage{now: now}
	const day = 24 * time.Hour
	for _, tc := range []struct {
		ago  time.Duration
		want string
	}{
		{-time.Hour, "just now"}, {0, "just now"}, {time.Minute - time.Nanosecond, "just now"},
		{time.Minute, "1 minute ago"}, {2 * time.Minute, "2 minutes ago"}, {time.Hour - time.Nanosecond, "59 minutes ago"},
		{time.Hour, "1 hour ago"}, {day - time.Nanosecond, "23 hours ago"},
		{day, "1 day ago"}, {30*day - time.Nanosecond, "29 days ago"},
		{30 * day, "1 month ago"}, {365*day - time.Nanosecond, "12 months ago"},
		{365 * day, "1 year ago"}, {2 * 365 * day, "2 years ago"},
	} {
		at := now.Add(-tc.ago)
		want := `<time datetime="` + at.UTC().Format(time.RFC3339) + `" title="` + at.UTC().Format("2 Jan 2006 15:04") + ` UTC">` + tc.want + `</time>`
		if got := write(func(w *strings.Builder) error { return ago(page, at).Render(context.Background(), w) }); got != want {
			t.Errorf("ago(now-%v) = %q, want %q", tc.ago, got, want)
		}
	}

	for n, want := range map[int]string{0: "0 comments", 1: "1 comment", 2: "2 comments", 1234: "1234 comments"} {
		if got := write(func(w *strings.Builder) error {
			return plural(n, "comment", "comments").Render(context.Background(), w)
		}); got != want {
			t.Errorf("plural(%d) = %q, want %q", n, got, want)
		}
	}

	if got, want := write(func(w *strings.Builder) error {
		return paragraphsOf("one\r\n\r\ntwo a\ntwo b\n\n\n\n  <three> & \n\n").Render(context.Background(), w)
	}), "<p>one</p><p>two a\ntwo b</p><p>&lt;three&gt; &amp;</p>"; got != want {
		t.Errorf("paragraphsOf = %q, want %q", got, want)
	}

	me := &loremnews.User{ID: 7, ScreenName: "me"}
	other := &loremnews.User{ID: 8, ScreenName: `<b>"o'"</b>`}
	mine := &basePage{CurrentUser: me}
	for _, tc := range []struct {
		b    *basePage
		u    *loremnews.User
		want string
	}{
		{mine, me, "you"},
		{mine, other, `<a href="/users/8">&lt;b&gt;&#34;o&#39;&#34;&lt;/b&gt;</a>`},
		{&basePage{}, me, `<a href="/users/7">me</a>`},
	} {
		if got := write(func(w *strings.Builder) error { return author(tc.b, tc.u).Render(context.Background(), w) }); got != tc.want {
			t.Errorf("author(%d as %v) = %q, want %q", tc.u.ID, tc.b.CurrentUser, got, tc.want)
		}
	}
}

// TestAppendDate checks the hand-made dates against the layouts they replace.
func TestAppendDate(t *testing.T) {
	times := []time.Time{
		time.Date(2026, 11, 23, 16, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
		time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(7, 6, 5, 4, 3, 2, 1, time.UTC),
		time.Date(987, 10, 9, 8, 7, 0, 0, time.UTC),
		time.Date(12345, 2, 28, 22, 10, 0, 0, time.UTC),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		times = append(times, time.Unix(r.Int64N(4_000_000_000), 0).UTC())
	}
	times = append(times, time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))
	for _, u := range times {
		want := u.Format("2 Jan 2006 15:04 MST")
		c := calendarOf(u)
		if got := string(c.appendDate(nil)); got != want {
			t.Fatalf("appendDate(%v) = %q, want %q", u, got, want)
		}
		if got, want := string(c.appendRFC3339(nil)), u.Format(time.RFC3339); got != want {
			t.Fatalf("appendRFC3339(%v) = %q, want %q", u, got, want)
		}
	}
}

// The row lists write the markup the templates wrote for these rows, byte
// for byte: escaped titles and names, the reader's own name as "you", the
// count's singular, a comment's paragraphs.
func TestRowLists(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	at := now.Add(-3 * time.Hour)
	page := &basePage{now: now}
	tm := `<time datetime="` + at.UTC().Format(time.RFC3339) + `" title="` + at.UTC().Format("2 Jan 2006 15:04 MST") + `">3 hours ago</time>`
	odd := &loremnews.User{ID: 2, ScreenName: `b<o>b & "co"`}
	post := &loremnews.Post{ID: 101, UserID: 2, Author: odd, Title: `<script>alert('x')</script>`, CommentsCount: 1, CreatedAt: at}
	render := func(c interface {
		Render(context.Context, io.Writer) error
	}) string {
		var b strings.Builder
		if err := c.Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	const title = `&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;`
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"index row", render(postRows(page, []*loremnews.Post{post})),
			`<li id="post-101"><a class="title" href="/posts/101">` + title + `</a><div class="meta">by <a href="/users/2">b&lt;o&gt;b &amp; &#34;co&#34;</a> · ` + tm + ` · <a href="/posts/101#comments">1 comment</a></div></li>`},
		{"index row, the reader's own", render(postRows(&basePage{CurrentUser: odd, now: now}, []*loremnews.Post{post})),
			`<li id="post-101"><a class="title" href="/posts/101">` + title + `</a><div class="meta">by you · ` + tm + ` · <a href="/posts/101#comments">1 comment</a></div></li>`},
		{"user's post row", render(userPostRows(page, []*loremnews.Post{post, {ID: 7, Title: "a&b", CommentsCount: 2, CreatedAt: at}})),
			`<li><a class="title" href="/posts/101">` + title + `</a><div class="meta">` + tm + ` · 1 comment</div></li>` +
				`<li><a class="title" href="/posts/7">a&amp;b</a><div class="meta">` + tm + ` · 2 comments</div></li>`},
		{"user's comment row", render(userCommentRows(page, []*loremnews.Comment{{ID: 9, PostID: 101, Post: post, Body: "One <b>.\r\n\r\n  \n\nTwo & three\nsame", CreatedAt: at}})),
			`<li id="comment-9"><div class="meta">on <a href="/posts/101#comment-9">` + title + `</a> · ` + tm + `</div><div class="body"><p>One &lt;b&gt;.</p><p>Two &amp; three` + "\n" + `same</p></div></li>`},
		{"post's comment rows, the reader's own with its links", render(postCommentRows(&basePage{CurrentUser: odd, now: now}, []*loremnews.Comment{
			{ID: 9, UserID: 2, Author: odd, Body: "Mine", CreatedAt: at},
			{ID: 8, UserID: 1, Author: &loremnews.User{ID: 1, ScreenName: "al"}, Body: "Theirs", CreatedAt: at},
		})),
			`<li id="comment-9"><div class="meta">you · ` + tm + ` ·  <a href="/comments/9/edit">Edit</a> ·  <a class="danger" href="/comments/9/delete">Delete</a></div><div class="body"><p>Mine</p></div></li>` +
				`<li id="comment-8"><div class="meta"><a href="/users/1">al</a> · ` + tm + `</div><div class="body"><p>Theirs</p></div></li>`},
		{"no rows", render(userCommentRows(page, nil)), ``},
	} {
		if tc.got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, tc.got, tc.want)
		}
	}
}

// TestNoUserTextAsMarkup: the builder takes a string variable as markup
// only through an explicit conversion, markup(s), and this package's code
// has none: every string of the user's goes through text, escaped.
func TestNoUserTextAsMarkup(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "markup" {
					t.Errorf("%s: a conversion to markup: escape the string with text instead", fset.Position(call.Pos()))
				}
			}
			return true
		})
	}
}

// excerptCase is a text, a length and the excerpt wanted.
type excerptCase struct {
	in   string
	n    int
	want string
}

// TestBodyExcerpt: a user's comments are listed as excerpts: a body of at
// most n characters whole, a longer one cut at a space near n with "…",
// its paragraphs kept; a seeded comment is never cut.
func TestBodyExcerpt(t *testing.T) {
	checkExcerpts(t, "bodyExcerpt", bodyExcerpt, 1, []excerptCase{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"one two three four", 10, "one two…"},
		{"éééééééééééé", 5, "ééééé…"},
		{"para one\n\npara two is long", 15, "para one\n\npara…"},
		{strings.Repeat("x", 60), 50, strings.Repeat("x", 50) + "…"}, // no space near the cut: cut in the word
	})
	lorem := seed.NewLorem(1)
	for range 20000 {
		if p := lorem.Paragraph(); bodyExcerpt(p, userCommentExcerpt) != p {
			t.Fatalf("a seeded comment of %d characters is cut", utf8.RuneCountInString(p))
		}
	}
}

// TestExcerpt: a page's description is its text on one line, whole if it
// fits in n characters, else cut to at most n with "…", at a space in
// the second half if there is one.
func TestExcerpt(t *testing.T) {
	checkExcerpts(t, "excerpt", excerpt, 0, []excerptCase{
		{"short", 10, "short"},
		{"  two\n\nlines\t here ", 20, "two lines here"},
		{"exactly10!", 10, "exactly10!"},
		{"one two three four", 10, "one two…"},
		{"a bcdefghijklmnop", 10, "a bcdefgh…"}, // the only space is in the first half: cut in the word
		{"éééééé éééééé", 10, "éééééé…"},        // characters, not bytes
		{strings.Repeat("word ", 1000), 155, strings.TrimSpace(strings.Repeat("word ", 30)) + "…"},
	})
}

// TestExcerptIsTheTextOnOneLine: excerpt reads only as much of s as it
// shows, and shows what its plain definition does: s's words joined by
// single spaces (strings.Fields, so Unicode's spaces too), its bytes that
// are not UTF-8 left out, then cut by cutAtWord if longer than n.
func TestExcerptIsTheTextOnOneLine(t *testing.T) {
	plain := func(s string, n int) string {
		if len(s) > 4*n {
			s = strings.ToValidUTF8(s[:4*n], "")
		}
		s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "")), " ")
		if utf8.RuneCountInString(s) <= n {
			return s
		}
		return cutAtWord(s, n-1, n-2-n/2)
	}
	r := rand.New(rand.NewPCG(3, 4))
	pieces := []string{"a", "lorem", "ipsum", " ", "  ", "\n", "\r\n", "\t", "\v\f", "\u00a0", "\u2003", "\u0085",
		"é", "日本", "\U0001F600", "\xff", "\xe6\x97", "\uFFFD", "&", "<b>", ".", "x\u200by"}
	for i := range 50000 {
		var b strings.Builder
		for range r.IntN(80) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		s, n := b.String(), 1+r.IntN(40)
		if i%10 == 0 {
			n = 155
		}
		if got, want := excerpt(s, n), plain(s, n); got != want {
			t.Fatalf("excerpt(%q, %d) = %q, want %q", s, n, got, want)
		}
	}
}

// checkExcerpts runs cut on each case, and checks that no excerpt is
// longer than n characters and the "…" beyond (over: 0 or 1).
func checkExcerpts(t *testing.T, name string, cut func(string, int) string, over int, cases []excerptCase) {
	t.Helper()
	for _, tc := range cases {
		got := cut(tc.in, tc.n)
		if got != tc.want {
			t.Errorf("%s(%q, %d) = %q, want %q", name, tc.in, tc.n, got, tc.want)
		}
		if n := utf8.RuneCountInString(got); n > tc.n+over {
			t.Errorf("%s(%q, %d) has %d characters", name, tc.in, tc.n, n)
		}
	}
}

// truncate counts characters, as the limits its callers pass do, and never
// leaves half a character or a byte that is not UTF-8.
func TestTruncateCountsCharacters(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abcdef", 3, "abc"},
		{"ééé", 2, "éé"}, // 6 bytes, 3 characters
		{"日本語テキスト", 3, "日本語"},
		{"a\xffbc", 2, "ab"},
		{"", 3, ""},
	} {
		if got := truncate(c.in, c.n); got != c.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

// TestTextEscapesEveryByte: text escapes as html.EscapeString does
// whatever the length of the string and wherever the characters to escape
// stand in it, in the eight-byte words it looks at or in the bytes after
// the last whole word; every other byte (0 to 255, so invalid UTF-8 too)
// passes unchanged.
func TestTextEscapesEveryByte(t *testing.T) {
	check := func(s string) {
		t.Helper()
		var h builder
		h.text(s)
		if got, want := string(h.b), html.EscapeString(s); got != want {
			t.Fatalf("text(%q) = %q, want %q (html.EscapeString)", s, got, want)
		}
	}
	for n := range 25 {
		for at := range n {
			for c := range 256 {
				b := []byte(strings.Repeat("x", n))
				b[at] = byte(c)
				check(string(b))
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	const some = "&<>'\" ab\x00\x80\xffé"
	for range 20000 {
		b := make([]byte, r.IntN(70))
		for i := range b {
			b[i] = some[r.IntN(len(some))]
		}
		check(string(b))
	}
}

func BenchmarkExcerpt(b *testing.B) {
	desc := "A post's description, as the seed writes them:\n\nseveral sentences of lorem ipsum, dolor sit amet, consectetur adipiscing elit,\n" +
		"sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation."
	for b.Loop() {
		excerpt(desc, 155)
	}
}
