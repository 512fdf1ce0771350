package docs

import "testing"

func TestEscapeHTML(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`<form action=//evil>x</form>`, `&lt;form action=//evil>x&lt;/form>`},
		{"a `<b>` c <i>", "a `<b>` c &lt;i>"},
		{"`filter[<field>]=<value>` and ``x ` <y> ``", "`filter[<field>]=<value>` and ``x ` <y> ``"},
		{"\\`<img onerror=x>`", "\\`&lt;img onerror=x>`"},
		{"`a\\`<img onerror=x>`", "`a\\`&lt;img onerror=x>`"},
		{"`open\n<iframe>`", "`open\n&lt;iframe>`"},
		{"| `a | <form>` |", "| `a | &lt;form>` |"},
		{"``a`<form>`", "``a`<form>`"},
		{"```\n<form>\n```", "```\n&lt;form>\n```"},
		{`\<script>`, `&lt;script>`},
		{"no html & fine", "no html & fine"},
	} {
		if got := escapeHTML(c.in); got != c.want {
			t.Errorf("escapeHTML(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestWithoutHTMLLeavesSpecAlone(t *testing.T) {
	spec := map[string]any{"info": map[string]any{"description": "<b>x</b>", "title": "<t>"},
		"components": map[string]any{"schemas": map[string]any{"A": map[string]any{"properties": map[string]any{
			"description": map[string]any{"type": "string", "description": "<i>"}}}}}}
	out := withoutHTML(spec).(map[string]any)
	if spec["info"].(map[string]any)["description"] != "<b>x</b>" {
		t.Fatal("the spec was changed")
	}
	if out["info"].(map[string]any)["description"] != "&lt;b>x&lt;/b>" || out["info"].(map[string]any)["title"] != "<t>" {
		t.Fatalf("info: %v", out["info"])
	}
	p := out["components"].(map[string]any)["schemas"].(map[string]any)["A"].(map[string]any)["properties"].(map[string]any)["description"].(map[string]any)
	if p["description"] != "&lt;i>" {
		t.Fatalf("a property named description: %v", p)
	}
}
