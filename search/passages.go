// Package search is semantic search for a static site: pages (Markdown or
// HTML) split into passages, each passage embedded, the vectors stored as
// f16 in a compact index with its manifest (sha256 of every file, as a
// model folder has), and an exact cosine ranking, the one the browser's
// <wasmllm-search> (web/wasmllm-search.js) computes.
package search

import (
	"html"
	"regexp"
	"strings"
)

// Passage is one searchable piece of a page.
type Passage struct {
	Page    string `json:"page"`    // the page's path, relative to the site's root, with "/"
	Heading string `json:"heading"` // the heading the passage is under ("" before the first)
	Anchor  string `json:"anchor"`  // the heading's fragment id ("" for none)
	Text    string `json:"text"`    // the passage, as embedded
}

// MaxWords is the most words a passage gets: paragraphs under one heading
// are joined up to it.
const MaxWords = 120

var (
	mdHeading = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlDrop  = regexp.MustCompile(`(?is)<(script|style|nav|header|footer|template)\b.*?</(script|style|nav|header|footer|template)>`)
	htmlBlock = regexp.MustCompile(`(?is)<(h[1-6])\b([^>]*)>(.*?)</h[1-6]>|<(p|li|pre|td|th|blockquote|dd|dt)\b[^>]*>(.*?)</(?:p|li|pre|td|th|blockquote|dd|dt)>`)
	htmlTag   = regexp.MustCompile(`(?s)<[^>]*>`)
	htmlID    = regexp.MustCompile(`(?i)\bid\s*=\s*["']([^"']+)["']`)
	spaces    = regexp.MustCompile(`\s+`)
	mdInline  = strings.NewReplacer("**", "", "__", "", "`", "")
	mdLink    = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// Slug is a heading's fragment id as GitHub writes it for Markdown:
// lower-case, punctuation dropped, spaces as "-".
func Slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ' || r == '-':
			b.WriteByte('-')
		case r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// collector joins paragraphs into passages of at most MaxWords words.
type collector struct {
	page, heading, anchor string
	words                 []string
	out                   []Passage
}

func (c *collector) flush() {
	if len(c.words) > 0 {
		c.out = append(c.out, Passage{Page: c.page, Heading: c.heading, Anchor: c.anchor, Text: strings.Join(c.words, " ")})
	}
	c.words = nil
}

func (c *collector) section(heading, anchor string) {
	c.flush()
	c.heading, c.anchor = heading, anchor
}

func (c *collector) paragraph(text string) {
	w := strings.Fields(text)
	if len(w) == 0 {
		return
	}
	if len(c.words) > 0 && len(c.words)+len(w) > MaxWords {
		c.flush()
	}
	for len(w) > MaxWords {
		c.words = append(c.words, w[:MaxWords]...)
		c.flush()
		w = w[MaxWords:]
	}
	c.words = append(c.words, w...)
}

// SplitMarkdown splits a Markdown page into passages: a heading starts a
// section, blank lines end paragraphs, code fences are skipped.
func SplitMarkdown(page, src string) []Passage {
	c := &collector{page: page}
	var para []string
	end := func() {
		if len(para) > 0 {
			t := mdLink.ReplaceAllString(strings.Join(para, " "), "$1")
			c.paragraph(mdInline.Replace(t))
			para = nil
		}
	}
	fence := false
	for _, line := range strings.Split(src, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			end()
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		if m := mdHeading.FindStringSubmatch(t); m != nil {
			end()
			h := mdInline.Replace(mdLink.ReplaceAllString(m[2], "$1"))
			c.section(h, Slug(h))
			continue
		}
		if t == "" {
			end()
			continue
		}
		para = append(para, strings.TrimLeft(t, "-*>|0123456789. "))
	}
	end()
	c.flush()
	return c.out
}

// SplitHTML splits an HTML page into passages: h1-h6 start sections (their
// id attribute the anchor); p, li, pre, td, th, blockquote, dd and dt are
// paragraphs; scripts, styles, navigation, headers and footers are left
// out.
func SplitHTML(page, src string) []Passage {
	c := &collector{page: page}
	src = htmlDrop.ReplaceAllString(src, " ")
	text := func(s string) string {
		return strings.TrimSpace(spaces.ReplaceAllString(html.UnescapeString(htmlTag.ReplaceAllString(s, " ")), " "))
	}
	for _, m := range htmlBlock.FindAllStringSubmatch(src, -1) {
		if m[1] != "" {
			h := text(m[3])
			anchor := ""
			if id := htmlID.FindStringSubmatch(m[2]); id != nil {
				anchor = id[1]
			}
			c.section(h, anchor)
			continue
		}
		c.paragraph(text(m[5]))
	}
	c.flush()
	return c.out
}
