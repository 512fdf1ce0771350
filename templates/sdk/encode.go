package sdk

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Every string of a description (dataset and column names, enum values, descriptions, titles,
// paths, operation ids) is text a user or a connected database chose. It reaches the SDKs only
// through the encoders below, one per target language and context: string literals, comments,
// Python docstrings and identifiers. The templates call them by name (see funcs), and
// TestTemplatesEncodeEveryValue keeps it so.

// jsString is s as a JavaScript/TypeScript string literal (JSON, which also escapes U+2028,
// U+2029, <, > and &), with every "/" escaped so that the literal is safe inside a /* */
// comment (JSDoc types) and a <script> element too.
func jsString(s string) string {
	b, _ := json.Marshal(strings.ToValidUTF8(s, "\uFFFD"))
	return strings.ReplaceAll(string(b), "/", `\/`)
}

// pyString is s as a Python string literal: printable ASCII as is (but " and \), everything
// else as an escape, so no newline, NUL or quote of the text can end the literal.
func pyString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// goString is s as a Go string literal.
func goString(s string) string { return strconv.Quote(strings.ToValidUTF8(s, "\uFFFD")) }

// comment is s as the text of a comment on one line (// and /* */ comments of Go, JavaScript
// and TypeScript): line breaks (\n, \r, U+2028/2029, NEL), other control characters and the
// byte order mark become spaces, so the text cannot end a // comment, and "*/" is broken up so
// that it cannot end a /* */ one.
func comment(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.In(r, unicode.Zl, unicode.Zp) || r == '\uFEFF' {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	return strings.ReplaceAll(s, "*/", "* /")
}

// docstring is s as text inside a Python docstring ("""..."""): one line as comment makes it,
// with backslashes and double quotes escaped so that no quote of the text ends the literal and
// no backslash starts an escape.
func docstring(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(comment(s))
}

// mdLine is s as text on one line of a README (Markdown): no line breaks or control
// characters, and no backticks (the README puts some values in code spans).
func mdLine(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(comment(s)), " "), "`", "'")
}

// reserved are the words of JavaScript, TypeScript and Python that are not identifiers (and a
// few that are best avoided): an identifier derived from a name gets a "_" after them.
var reserved = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`abstract any arguments as async await boolean break case catch class const constructor
		continue debugger declare default delete do else enum eval export extends false finally for from function get if
		implements import in infer instanceof interface is keyof let module namespace never new null number object of
		package private protected public readonly require return set static string super switch symbol this throw true
		try type typeof undefined unique unknown var void while with yield
		False None True and assert def del elif except global lambda nonlocal not or pass raise match case
		self body query`) { // the last: the generated methods' own parameters
		reserved[w] = true
	}
}

// ident is name as an identifier of every target language: letters (NFKC-stable, so Python
// reads the same name), digits and "_" kept, anything else "_"; "_" first when it would start
// with a digit or be empty, "_" after a reserved word.
func ident(name string) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(name, "") {
		if isIdentRune(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if s == "" || unicode.IsDigit([]rune(s)[0]) {
		s = "_" + s
	}
	if reserved[s] {
		s += "_"
	}
	return s
}

func isIdentRune(r rune) bool {
	switch {
	case r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9':
		return true
	case r < utf8.RuneSelf:
		return false
	}
	return (unicode.IsLetter(r) || unicode.IsDigit(r)) && !unicode.Is(unicode.Pattern_Syntax, r) && norm.NFKC.String(string(r)) == string(r)
}

// isIdent says whether name is an identifier as it is (a property name that needs no quotes).
func isIdent(name string) bool { return name != "" && ident(name) == name }

// jsPath is an operation's path as a JavaScript expression: its literal parts as string
// literals, its {parameters} as the URI-encoded arguments named by jsParam.
func jsPath(p string) string {
	return pathExpr(p, jsString, func(name string) string { return "encodeURIComponent(String(" + jsParam(name) + "))" })
}

// pyPath is the same as a Python expression.
func pyPath(p string) string {
	return pathExpr(p, pyString, func(name string) string { return "urllib.parse.quote(str(" + ident(name) + "), safe='')" })
}

// jsParam is a path parameter's JavaScript name: dataset_id → datasetId.
func jsParam(name string) string { return ident(camel(name)) }

func pathExpr(p string, lit func(string) string, param func(string) string) string {
	var parts []string
	for p != "" {
		i := strings.IndexByte(p, '{')
		j := strings.IndexByte(p[max(i, 0):], '}') + max(i, 0)
		if i < 0 || j < i {
			parts = append(parts, lit(p))
			break
		}
		if i > 0 {
			parts = append(parts, lit(p[:i]))
		}
		parts = append(parts, param(p[i+1:j]))
		p = p[j+1:]
	}
	if len(parts) == 0 {
		return lit("")
	}
	return strings.Join(parts, " + ")
}
