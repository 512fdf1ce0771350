package docs

import "strings"

// Descriptions are Markdown, and Markdown passes raw HTML through: a dataset's or a column's
// description with <form>, <iframe> or <img onerror> would become live elements of the pages.
// The pages get the description with the HTML of every description written as text instead
// (the Markdown still renders); Redoc also sanitises what it renders (untrustedSpec).

// withoutHTML is spec (a JSON value) with every "description" string passed through
// escapeHTML. spec itself is not changed (the platform's is shared).
func withoutHTML(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			if s, ok := x.(string); ok && k == "description" {
				out[k] = escapeHTML(s)
			} else {
				out[k] = withoutHTML(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = withoutHTML(x)
		}
		return out
	}
	return v
}

// escapeHTML writes every "<" of Markdown text as "&lt;", which Markdown shows as "<" and
// never reads as a tag, but inside code spans, where "<" is already text (and "&lt;" would
// show as is). A code span counts only when every Markdown reader agrees that it is one: a
// backtick run closed by one of the same length on the same line, not after a backslash and
// with no "|" inside (a table cell may end there).
func escapeHTML(md string) string {
	var b strings.Builder
	for i := 0; i < len(md); {
		switch c := md[i]; {
		case c == '\\' && i+1 < len(md) && md[i+1] == '`':
			b.WriteString("\\`")
			i += 2
		case c == '\\' && i+1 < len(md) && md[i+1] == '<':
			b.WriteString("&lt;") // an escaped "<" shows as "<"
			i += 2
		case c == '<':
			b.WriteString("&lt;")
			i++
		case c == '`':
			n := run(md, i)
			if end := closing(md, i+n, n); end >= 0 {
				b.WriteString(md[i:end])
				i = end
			} else {
				b.WriteString(md[i : i+n])
				i += n
			}
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// run is the length of the backtick run at i.
func run(s string, i int) int {
	n := 0
	for i+n < len(s) && s[i+n] == '`' {
		n++
	}
	return n
}

// closing is the end of the code span whose content starts at from and that a run of n
// backticks closes, or -1 when there is none on the line (or a "|" comes first).
func closing(s string, from, n int) int {
	for j := from; j < len(s); {
		switch s[j] {
		case '\n', '\r', '|':
			return -1
		case '`':
			m := run(s, j)
			if m == n {
				return j + m
			}
			j += m
		default:
			j++
		}
	}
	return -1
}
