package config

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// loadEnvNames returns the variables Load reads: the first argument of every env(...) call
// (and any os.Getenv or os.LookupEnv) in config.go.
func loadEnvNames(t *testing.T) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "config.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		var fn string
		switch x := call.Fun.(type) {
		case *ast.Ident:
			fn = x.Name
		case *ast.SelectorExpr:
			fn = x.Sel.Name
		}
		if fn != "env" && fn != "Getenv" && fn != "LookupEnv" {
			return true
		}
		lit, ok := call.Args[0].(*ast.BasicLit)
		if (!ok || lit.Kind != token.STRING) && fn != "env" {
			return true // the env helper's own lookup of its parameter
		}
		if !ok || lit.Kind != token.STRING {
			t.Errorf("%s called with a name that is not a literal: the reference test cannot see it", fn)
			return true
		}
		name, _ := strconv.Unquote(lit.Value)
		names[name] = true
		return true
	})
	if len(names) < 10 {
		t.Fatalf("found only %d variables in Load: the test no longer reads it", len(names))
	}
	return names
}

// TestReferenceCoversLoad: every variable Load reads is in Variables, and every variable of
// Variables is read by Load, once.
func TestReferenceCoversLoad(t *testing.T) {
	read := loadEnvNames(t)
	listed := map[string]bool{}
	for _, v := range Variables {
		if listed[v.Name] {
			t.Errorf("%s is listed twice", v.Name)
		}
		listed[v.Name] = true
		if v.Default == "" || v.Meaning == "" {
			t.Errorf("%s needs a default and a meaning", v.Name)
		}
		if !read[v.Name] {
			t.Errorf("%s is in the reference but Load does not read it", v.Name)
		}
	}
	for name := range read {
		if !listed[name] {
			t.Errorf("Load reads %s but the reference (Variables in reference.go) does not list it", name)
		}
	}
}

// TestMarkdown: the printed reference has a row per variable.
func TestMarkdown(t *testing.T) {
	md := Markdown()
	for _, v := range Variables {
		if !strings.Contains(md, "| `"+v.Name+"` |") {
			t.Errorf("%s has no row", v.Name)
		}
	}
}
