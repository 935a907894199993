package seed

import (
	"math/rand/v2"
	"strings"
)

// loremWords is the classic lorem-ipsum vocabulary.
var loremWords = strings.Fields(`lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor
incididunt ut labore et dolore magna aliqua enim ad minim veniam quis nostrud exercitation ullamco laboris
nisi aliquip ex ea commodo consequat duis aute irure in reprehenderit voluptate velit esse cillum eu fugiat
nulla pariatur excepteur sint occaecat cupidatat non proident sunt culpa qui officia deserunt mollit anim id
est laborum curabitur pretium tincidunt lacus nulla gravida orci a odio nullam varius turpis et commodo
pharetra eros bibendum elit nec luctus magna felis sollicitudin mauris integer posuere erat a ante venenatis
dapibus porta ac consectetur vestibulum at eros praesent commodo cursus magna vel scelerisque nisl fusce
dapibus tellus ac cursus commodo tortor mauris condimentum nibh ut fermentum massa justo sit amet risus
cras mattis consectetur purus aenean lacinia bibendum nulla morbi leo risus porta eget metus donec ullamcorper
nulla non metus auctor fringilla maecenas faucibus mollis interdum etiam porta sem malesuada magna`)

// Lorem generates deterministic lorem-ipsum text from its random source.
type Lorem struct{ r *rand.Rand }

// NewLorem returns a generator seeded with seed.
func NewLorem(seed uint64) *Lorem {
	return &Lorem{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Words returns n random words separated by spaces.
func (l *Lorem) Words(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(loremWords[l.r.IntN(len(loremWords))])
	}
	return b.String()
}

// Sentence returns a capitalised sentence of 6–15 words ending in a period.
func (l *Lorem) Sentence() string {
	s := l.Words(6 + l.r.IntN(10))
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

// Paragraph returns 3–7 sentences.
func (l *Lorem) Paragraph() string {
	n := 3 + l.r.IntN(5)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = l.Sentence()
	}
	return strings.Join(parts, " ")
}

// Paragraphs returns n paragraphs separated by blank lines.
func (l *Lorem) Paragraphs(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = l.Paragraph()
	}
	return strings.Join(parts, "\n\n")
}

// Title returns 3–8 words in title case.
func (l *Lorem) Title() string {
	words := strings.Fields(l.Words(3 + l.r.IntN(6)))
	for i, w := range words {
		words[i] = strings.ToUpper(w[:1]) + w[1:]
	}
	return strings.Join(words, " ")
}
