package sdk

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/scanner"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"text/template/parse"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"golang.org/x/text/unicode/norm"
)

// hostile are strings that end a literal or a comment of some target language and then call
// PWNED: if any reaches an SDK unencoded, PWNED is code there (or the file does not parse).
var hostile = []string{
	`*/ PWNED(); /*`,
	`"; PWNED(); "`,
	`'; PWNED(); '`,
	"\n PWNED()\n",
	"\r PWNED()\r",
	"\u2028 PWNED() \u2029",
	"\u0085 PWNED()",
	`\"; PWNED(); //`,
	`\`,
	"\\`; PWNED(); //",
	"`; PWNED(); `",
	"${PWNED()}",
	`"""; PWNED(); """`,
	`'''; PWNED(); '''`,
	`{PWNED()}`,
	`\u0022; PWNED(); \u0022`,
	`\x22; PWNED(); #`,
	`\N{QUOTATION MARK}; PWNED(); #`,
	"</script><script>PWNED()</script>",
	"\x00\"; PWNED(); //",
	"\ufeff\"; PWNED(); //",
	"\n//go:generate PWNED\n",
	"/* PWNED() */ */ PWNED() /*",
	`a" | PWNED | "b`,
	`"] = PWNED(); x["`,
	"\xff\"; PWNED(); //",
	`*/ import('node:fs').then(f=>f.writeFileSync('/tmp/x','pwned')); /*`,
	"\"\"\"\nimport os; PWNED()\n\"\"\"",
}

// hostileDoc is a description in which every string a user or a connected database chooses
// holds s: title, version, descriptions, summaries, operation ids, parameter and property
// names, enum values, defaults, examples, titles, server URLs and a path's literal text. With
// plainNames the names (properties, parameters, operation ids, paths) are plain instead.
func hostileDoc(t testing.TB, plainNames bool, ss ...string) *openapi3.T {
	t.Helper()
	name := func(i int, s string) string {
		if plainNames {
			return fmt.Sprintf("p%d", i)
		}
		return s
	}
	props := map[string]any{"plain": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/components/schemas/9-Bad.Name"}}}
	var enum []any
	for _, s := range ss {
		enum = append(enum, s)
	}
	for i, s := range ss {
		props[name(i, s)] = map[string]any{"type": "string", "enum": enum, "description": s, "default": s, "example": s, "title": s, "nullable": i%2 == 0}
	}
	model := map[string]any{"type": "object", "description": ss[0], "title": ss[0], "required": ss[:1], "properties": props}
	params := []any{map[string]any{"name": "dataset_id", "in": "path", "required": true, "schema": map[string]any{"type": "string"}}}
	for i, s := range ss {
		params = append(params, map[string]any{"name": name(i, s), "in": "query", "description": s, "schema": map[string]any{"type": "string", "enum": enum, "default": s}})
	}
	op := func(id string) map[string]any {
		return map[string]any{"operationId": id, "summary": ss[0], "description": ss[0], "parameters": params,
			"requestBody": map[string]any{"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Item"}}}},
			"responses": map[string]any{"200": map[string]any{"description": ss[0],
				"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/9-Bad.Name"}}}}}}
	}
	paths := map[string]any{}
	for i, s := range ss {
		// A path whose literal text is hostile (a path's text is the API's, but encode it anyway).
		paths["/api/v1/datasets/{dataset_id}/x"+strings.NewReplacer("{", "(", "}", ")", "/", "|").Replace(name(i, s))] = map[string]any{"post": op(name(i, "op"+s+string(rune('a'+i%26))))}
	}
	doc := map[string]any{
		"openapi": "3.0.3",
		"info":    map[string]any{"title": ss[0], "version": ss[0], "description": ss[0]},
		"servers": []any{map[string]any{"url": ss[0], "description": ss[0]}},
		"paths":   paths,
		"components": map[string]any{"schemas": map[string]any{
			"Item": model, "9-Bad.Name": model, "class": model,
		}},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	d, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// checkSDKs generates every SDK of doc (every string of its input s as well) and checks that
// each source file parses as its language with PWNED nowhere in its code: Go with go/parser
// and go/scanner, JavaScript and TypeScript with TypeScript's parser, Python with ast.
// Go's generator refuses names it cannot write (UnrepresentableError): its SDK is checked with
// the same description but plain names.
func checkSDKs(t testing.TB, s string, ss ...string) {
	t.Helper()
	ts, err := filepath.Abs("../../scripts/tools/sdk/node_modules/typescript/lib/typescript.js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ts); err != nil {
		t.Fatalf("TypeScript is not installed: run scripts/ensure-node-tools.sh: %v", err)
	}
	dir := t.TempDir()
	var js, py []string
	for _, lang := range Languages {
		gen := func(plainNames bool) (*Result, error) {
			doc := hostileDoc(t, plainNames, ss...)
			raw, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			return Generate(lang, Input{DatasetID: s, Name: s, Package: "hostile", Version: s, Server: s, DescriptionURL: s, Doc: doc, JSON: raw})
		}
		res, err := gen(false)
		var unrepresentable *UnrepresentableError
		if lang == "go" && errors.As(err, &unrepresentable) {
			res, err = gen(true)
		}
		if err != nil {
			t.Fatalf("%s: %v", lang, err)
		}
		zr, err := zip.NewReader(bytes.NewReader(res.Archive), int64(len(res.Archive)))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			b.ReadFrom(rc)
			rc.Close()
			p := filepath.Join(dir, lang, filepath.Base(f.Name))
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			switch filepath.Ext(p) {
			case ".go":
				checkGo(t, p, b.Bytes())
			case ".ts", ".mjs", ".js":
				js = append(js, p)
			case ".py":
				py = append(py, p)
			}
		}
	}
	for _, c := range [][]string{append([]string{"node", "testdata/check.cjs", ts}, js...), append([]string{"python3", "testdata/check.py"}, py...)} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", c[1], err, out)
		}
	}
}

func checkGo(t testing.TB, path string, src []byte) {
	t.Helper()
	fset := token.NewFileSet()
	if _, err := parser.ParseFile(fset, path, src, parser.ParseComments); err != nil {
		t.Errorf("%s does not parse: %v", path, err)
		return
	}
	var s scanner.Scanner
	s.Init(fset.AddFile(path, -1, len(src)), src, func(pos token.Position, msg string) { t.Errorf("%s: %s", pos, msg) }, 0)
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return
		}
		if tok == token.IDENT && lit == "PWNED" {
			t.Errorf("%s: PWNED is code at %s", path, fset.Position(pos))
		}
	}
}

// TestSDKsEncodeHostileStrings: a description holding every hostile string in every field
// makes four SDKs that parse, with none of that text outside string literals and comments.
func TestSDKsEncodeHostileStrings(t *testing.T) {
	for i := range hostile {
		// Each string leads once (title, version, summaries, descriptions), all are names and enums.
		ss := append([]string{hostile[i]}, append(append([]string{}, hostile[:i]...), hostile[i+1:]...)...)
		if i%7 != 0 && i != len(hostile)-1 {
			continue // every 7th leads: four generations of each language are enough to cover the leading fields
		}
		checkSDKs(t, hostile[i], ss...)
	}
}

// FuzzSDKStrings: any string in every field of a description makes SDKs that parse with the
// string only inside literals and comments. Each input runs oapi-codegen, node and python3
// (seconds under the fuzzer's instrumentation): fuzz FuzzEncoders for long runs.
func FuzzSDKStrings(f *testing.F) {
	for i := 0; i < len(hostile); i += 4 {
		f.Add(strings.Join(hostile[i:min(i+4, len(hostile))], " "))
	}
	f.Fuzz(func(t *testing.T, s string) {
		// A string that is itself the identifier PWNED (give or take case and characters an
		// identifier cannot hold) names fields and types PWNED by design: there the marker's
		// being code says nothing (a 10-minute run found "PWNED" itself).
		core := strings.Map(func(r rune) rune {
			if r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
				return r
			}
			return -1
		}, s)
		if strings.EqualFold(strings.Trim(core, "_"), "PWNED") {
			t.Skip("the input is the marker itself")
		}
		checkSDKs(t, s, s, s+"1", "plain")
	})
}

// encoders are the template functions that encode a value for its context.
var encoders = regexp.MustCompile(`^(js|py|go|comment|docstring|md|ident|pyident|jsparam|jspath|pypath|key)$`)

// TestTemplatesEncodeEveryValue: every value a template writes goes through an encoder, but the
// types that model.go builds from encoded parts and the checked package name.
func TestTemplatesEncodeEveryValue(t *testing.T) {
	built := map[string]bool{".TS": true, ".Py": true, ".Body": true, ".Response": true, ".Package": true, ".Example": true, ".Language": false}
	var walk func(name string, n parse.Node)
	walk = func(name string, n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n != nil {
				for _, c := range n.Nodes {
					walk(name, c)
				}
			}
		case *parse.IfNode:
			walk(name, n.List)
			walk(name, n.ElseList)
		case *parse.RangeNode:
			walk(name, n.List)
			walk(name, n.ElseList)
		case *parse.ActionNode:
			cmd := n.Pipe.Cmds[0]
			if id, ok := cmd.Args[0].(*parse.IdentifierNode); ok && encoders.MatchString(id.Ident) {
				return
			}
			if _, ok := cmd.Args[0].(*parse.StringNode); ok {
				return
			}
			if built[cmd.Args[0].String()] && len(n.Pipe.Cmds) == 1 && len(cmd.Args) == 1 {
				return
			}
			t.Errorf("%s: %s writes a value without an encoder", name, n)
		}
	}
	paths, _ := filepath.Glob("*/*.tmpl")
	if len(paths) < 8 {
		t.Fatalf("templates: %v", paths)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		trees, err := parse.Parse(p, string(b), "{{", "}}", funcs, map[string]any{"not": true, "and": true, "or": true, "printf": true, "len": true, "index": true, "eq": true})
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range trees {
			walk(p, tr.Root)
		}
	}
}

// FuzzEncoders: what each encoder makes of any string keeps to its context (fast, so it is
// the one to fuzz for long: go test -run '^$' -fuzz FuzzEncoders ./templates/sdk/). String
// literals decode back to the string (invalid UTF-8 as U+FFFD); comments have no line break
// and no "*/"; identifiers are identifiers.
func FuzzEncoders(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := strings.ToValidUTF8(s, "\uFFFD")
		js := jsString(s)
		var back string
		if err := json.Unmarshal([]byte(js), &back); err != nil || back != want {
			t.Fatalf("jsString(%q) = %s: %v", s, js, err)
		}
		if strings.ContainsAny(js, "\n\r\u2028\u2029<>") || strings.Contains(js, "*/") {
			t.Fatalf("jsString(%q) = %s", s, js)
		}
		if py, ok := pyUnquote(pyString(s)); !ok || py != want {
			t.Fatalf("pyString(%q) = %s", s, pyString(s))
		}
		if g, err := strconv.Unquote(goString(s)); err != nil || g != want {
			t.Fatalf("goString(%q) = %s", s, goString(s))
		}
		for _, c := range []string{comment(s), docstring(s)} {
			if strings.ContainsAny(c, "\n\r\u2028\u2029\u0085\x00\ufeff") || strings.Contains(c, "*/") {
				t.Fatalf("comment of %q = %q", s, c)
			}
		}
		if d := docstring(s); strings.Contains(strings.ReplaceAll(strings.ReplaceAll(d, `\\`, ""), `\"`, ""), `"`) || strings.HasSuffix(strings.ReplaceAll(d, `\\`, ""), `\`) {
			t.Fatalf("docstring(%q) = %q", s, d)
		}
		id := ident(s)
		if !token.IsIdentifier(id) && !token.IsKeyword(id) || reserved[id] || ident(id) != id { // Go keywords are fine: the Go SDK names nothing with ident
			t.Fatalf("ident(%q) = %q", s, id)
		}
		for _, r := range id {
			if r >= utf8.RuneSelf && norm.NFKC.String(string(r)) != string(r) {
				t.Fatalf("ident(%q) = %q: Python reads %q otherwise", s, id, r)
			}
		}
		if md := mdLine(s); strings.ContainsAny(md, "\n\r`") {
			t.Fatalf("mdLine(%q) = %q", s, md)
		}
	})
}

// pyUnquote reads a string literal as pyString writes them: printable ASCII, \\ \" \uXXXX and
// \UXXXXXXXX, between double quotes.
func pyUnquote(lit string) (string, bool) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return "", false
	}
	var b strings.Builder
	for i := 1; i < len(lit)-1; i++ {
		c := lit[i]
		switch {
		case c == '"' || c < 0x20 || c >= 0x7f:
			return "", false
		case c != '\\':
			b.WriteByte(c)
		case i+1 < len(lit)-1 && (lit[i+1] == '\\' || lit[i+1] == '"'):
			b.WriteByte(lit[i+1])
			i++
		case i+1 < len(lit)-1 && (lit[i+1] == 'u' || lit[i+1] == 'U'):
			n := 4
			if lit[i+1] == 'U' {
				n = 8
			}
			if i+2+n > len(lit)-1 {
				return "", false
			}
			r, err := strconv.ParseUint(lit[i+2:i+2+n], 16, 32)
			if err != nil {
				return "", false
			}
			b.WriteRune(rune(r))
			i += 1 + n
		default:
			return "", false
		}
	}
	return b.String(), true
}
