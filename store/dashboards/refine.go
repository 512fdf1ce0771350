package dashboards

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"dataplatform/store/ingest"
	"dataplatform/store/nlsql"
	"dataplatform/store/nlsql/lexicon"
)

// NotUnderstood is a refine prompt the rules cannot apply: nothing was changed.
type NotUnderstood struct {
	Reason      string
	Suggestions []string
}

func (e *NotUnderstood) Error() string { return e.Reason }

// refineExamples are prompts the rules apply, offered when one is not understood.
var refineExamples = []string{
	"add a chart of amount by region", "add a chart of orders per month", "remove the Orders by status tile",
	"make it a pie chart", "change the time grain to month", "show the top 5", "sort ascending",
	"add a filter on status", "rename it to Revenue",
}

func notUnderstood(reason string, extra ...string) error {
	return &NotUnderstood{Reason: reason, Suggestions: append(extra, refineExamples...)}
}

// Refinement is what Refine did, in a sentence per change.
type Refinement struct {
	Changes  []string
	Warnings []string
}

var (
	renameRE  = regexp.MustCompile(`^(?:rename|retitle|call|title)\s+(?:(?:it|this|this tile|this chart)\s+|(?:the\s+)?(.+?)\s+(?:tile|chart|graph)\s+)?(?:to|as)\s+["'“]?(.+?)["'”]?\s*$`)
	removeRE  = regexp.MustCompile(`^(?:remove|delete|drop|hide)\s+(?:the\s+)?(.+?)\s*$`)
	typeRE    = regexp.MustCompile(`\b(stacked bar|bar|line|area|pie|donut|doughnut|table|scatter|histogram)\b`)
	grainRE   = regexp.MustCompile(`\b(hour|hourly|day|daily|week|weekly|month|monthly|quarter|quarterly|year|yearly|annual|annually)\b`)
	topRE     = regexp.MustCompile(`\btop\s+([0-9]{1,3})\b`)
	sortRE    = regexp.MustCompile(`^(?:sort|order)\b(?:\s+(?:it|this|the\s+bars|by\s+(\w+)))?\s*(asc|ascending|desc|descending|largest first|smallest first|highest first|lowest first)?\s*$`)
	filterRE  = regexp.MustCompile(`^add\s+(?:a\s+)?filter\s+(?:on|for|by)\s+(?:the\s+)?(.+?)\s*$`)
	addRE     = regexp.MustCompile(`^(?:add|show|plot|chart|draw)\s+(?:me\s+)?(?:a\s+|an\s+)?(?:(stacked bar|bar|line|area|pie|donut)\s+)?(?:chart|graph|tile|plot)?\s*(?:of|with|for)?\s*(?:the\s+)?(.+?)\s+(?:by|per|over|across)\s+(?:the\s+)?(.+?)\s*$`)
	typeWords = regexp.MustCompile(`\b(make|change|turn|switch|convert|show|display|draw|as)\b`)
)

func grainOf(w string) string {
	switch w {
	case "hourly":
		return "hour"
	case "daily":
		return "day"
	case "weekly":
		return "week"
	case "monthly":
		return "month"
	case "quarterly":
		return "quarter"
	case "yearly", "annual", "annually":
		return "year"
	}
	return w
}

// Refine applies a plain-language edit to spec: scope "dashboard", or "tile" with the tile at
// tilePath. It understands adding a chart of a measure (or the count) by a category or a
// time grain, removing a tile, changing a chart's type, the time grain, top N, sort order,
// adding a filter on a category, and renaming; anything else is NotUnderstood, and spec is
// left as it was.
func Refine(spec *Spec, prompt, scope, tilePath string, in Input) (*Refinement, error) {
	e := &edit{spec: spec, in: in, tilePath: tilePath, r: &Refinement{},
		p:    strings.ToLower(strings.TrimSpace(strings.TrimRight(strings.TrimSpace(prompt), ".!"))),
		orig: strings.TrimRight(strings.TrimSpace(prompt), ".!")}
	if scope == "tile" {
		if e.target = spec.Tile(tilePath); e.target == nil {
			return nil, fmt.Errorf("no tile at %s", tilePath)
		}
	}
	p, r := e.p, e.r
	var err error
	switch {
	case renameRE.MatchString(p):
		err = e.rename()
	case filterRE.MatchString(p):
		err = addFilter(spec, in, filterRE.FindStringSubmatch(p)[1], r)
	case addRE.MatchString(p) && !strings.HasPrefix(p, "show the top"):
		m := addRE.FindStringSubmatch(p)
		err = addChart(spec, in, m[1], m[2], m[3], r)
	case removeRE.MatchString(p):
		err = e.remove()
	case topRE.MatchString(p):
		err = e.top()
	case sortRE.MatchString(p):
		err = e.sort()
	case grainRE.MatchString(p) && (strings.Contains(p, "grain") || strings.Contains(p, "group") || strings.Contains(p, "per ") ||
		strings.Contains(p, "by ") || strings.HasPrefix(p, "show ") || typeWords.MatchString(p)):
		err = e.grain()
	case typeRE.MatchString(p) && typeWords.MatchString(p):
		err = e.chartType()
	default:
		err = notUnderstood(fmt.Sprintf("%q is not an edit the built-in rules apply", e.orig))
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// edit is one Refine: the prompt (p lower-cased, orig as written), the tile in scope (nil:
// the whole dashboard) and what was done.
type edit struct {
	spec     *Spec
	in       Input
	p, orig  string
	target   *Tile
	tilePath string
	r        *Refinement
}

// named is the tile a phrase names (its title, id or path, or what it shows), or the tile
// in scope.
func (e *edit) named(phrase string) (*Tile, string) {
	phrase = strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(phrase), " tile"), " chart"))
	if e.target != nil && (phrase == "" || phrase == "it" || phrase == "this" || phrase == "this tile" || phrase == "this chart") {
		return e.target, ""
	}
	for _, pt := range e.spec.Tiles() {
		if strings.EqualFold(pt.Tile.Title, phrase) || pt.Tile.ID == phrase || pt.Path == phrase {
			return pt.Tile, pt.Path
		}
	}
	if ts := described(e.spec, phrase); len(ts) == 1 {
		return ts[0].Tile, ts[0].Path
	}
	return nil, ""
}

func (e *edit) rename() error {
	m := renameRE.FindStringSubmatch(e.p)
	t, _ := e.named(m[1])
	if t == nil && m[1] == "" {
		return notUnderstood("say which tile: rename the Orders by status tile to ..., or refine the tile itself (scope tile)")
	}
	if t == nil {
		return whichTile(e.spec, m[1])
	}
	// The new title as the user wrote it (not lower-cased).
	title := renameRE.FindStringSubmatch(strings.ToLower(e.orig))[2]
	title = e.orig[strings.LastIndex(strings.ToLower(e.orig), title):]
	title = strings.Trim(title, `"'“”`)
	e.r.Changes = append(e.r.Changes, fmt.Sprintf("renamed %q to %q", t.Title, title))
	t.Title = title
	return nil
}

func (e *edit) remove() error {
	m := removeRE.FindStringSubmatch(e.p)
	t, path := e.named(m[1])
	if t == nil {
		return whichTile(e.spec, m[1])
	}
	if path == "" {
		path = e.tilePath
	}
	e.r.Changes = append(e.r.Changes, fmt.Sprintf("removed %q", t.Title))
	removeTile(e.spec, path)
	return nil
}

func (e *edit) top() error {
	n, _ := strconv.Atoi(topRE.FindStringSubmatch(e.p)[1])
	if n < 1 || n > 100 {
		return notUnderstood("top N takes a number from 1 to 100")
	}
	for _, t := range scoped(e.spec, e.target) {
		if t.Encoding.TopN == 0 || !strings.Contains(t.Query.SQL, "rank <= "+strconv.Itoa(t.Encoding.TopN)) {
			continue
		}
		t.Query.SQL = strings.Replace(t.Query.SQL, "rank <= "+strconv.Itoa(t.Encoding.TopN), "rank <= "+strconv.Itoa(n), 1)
		e.r.Changes = append(e.r.Changes, fmt.Sprintf("%q shows the top %d (the rest as Other)", t.Title, n))
		t.Encoding.TopN = n
	}
	if len(e.r.Changes) == 0 {
		return notUnderstood("no tile in scope is a top-N breakdown; refine a breakdown tile (scope tile)")
	}
	return nil
}

func (e *edit) sort() error {
	m := sortRE.FindStringSubmatch(e.p)
	dir := "desc"
	switch m[2] {
	case "asc", "ascending", "smallest first", "lowest first":
		dir = "asc"
	case "":
		return notUnderstood("say which way to sort: ascending or descending")
	}
	ts := scoped(e.spec, e.target)
	if len(ts) != 1 {
		return notUnderstood("sorting applies to one tile: refine the tile itself (scope tile)")
	}
	t := ts[0]
	field := ""
	if len(t.Encoding.Y) > 0 {
		field = t.Encoding.Y[0]
	} else if t.Encoding.Value != "" {
		field = t.Encoding.Value
	}
	if m[1] != "" {
		field = m[1]
	}
	if field == "" || !slices.Contains(append([]string{t.Encoding.X, t.Encoding.Value}, t.Encoding.Y...), field) {
		return notUnderstood(fmt.Sprintf("%q has no column %q to sort by", t.Title, m[1]))
	}
	t.Query.SQL = "SELECT *\nFROM (\n" + indent(t.Query.SQL) + "\n) sorted\nORDER BY " + q(field) + " " + strings.ToUpper(dir)
	t.Encoding.Sort = &Sort{Field: field, Direction: dir}
	e.r.Changes = append(e.r.Changes, fmt.Sprintf("%q sorted by %s %s", t.Title, field, map[string]string{"asc": "ascending", "desc": "descending"}[dir]))
	return nil
}

func (e *edit) grain() error {
	g := grainOf(grainRE.FindStringSubmatch(e.p)[1])
	for _, t := range scoped(e.spec, e.target) {
		old := t.Encoding.TimeGrain
		if old == "" || old == g || !strings.Contains(t.Query.SQL, "date_trunc('"+old+"'") {
			continue
		}
		t.Query.SQL = strings.ReplaceAll(t.Query.SQL, "date_trunc('"+old+"'", "date_trunc('"+g+"'")
		t.Encoding.TimeGrain = g
		t.Title = strings.Replace(t.Title, " per "+old, " per "+g, 1)
		e.r.Changes = append(e.r.Changes, fmt.Sprintf("%q now by %s", t.Title, g))
	}
	if len(e.r.Changes) == 0 {
		return notUnderstood("no time series in scope has another grain than " + g)
	}
	return nil
}

func (e *edit) chartType() error {
	typ := strings.ReplaceAll(typeRE.FindStringSubmatch(e.p)[1], " ", "_")
	if typ == "doughnut" {
		typ = "donut"
	}
	t := e.target
	if t == nil {
		// "make the Orders by status tile a bar chart", "turn the status chart into a
		// pie": the tile the words before the type name, by its title or what it shows.
		m := typedTileRE.FindStringSubmatch(e.p)
		if m == nil {
			return notUnderstood("a chart type applies to one tile: name it (\"make the Orders by status chart a pie chart\") or refine the tile itself (scope tile)", titles(e.spec)...)
		}
		if t, _ = e.named(m[1]); t == nil {
			return whichTile(e.spec, m[1])
		}
	}
	return changeType(t, typ, e.r)
}

// typedTileRE finds the tile phrase of a chart-type edit: "make the status chart a pie
// chart", "change the Orders by status tile to bars", "turn the region graph into a donut".
var typedTileRE = regexp.MustCompile(`^(?:make|change|turn|switch|convert|show|display|draw)\s+(?:the\s+)?(.+?)\s+(?:tile|chart|graph|plot|visual)?\s*(?:a|an|to|into|as)\s+(?:a\s+|an\s+)?(?:stacked bar|bar|line|area|pie|donut|doughnut|table|scatter|histogram)s?\b`)

// described lists the tiles whose title words and shown columns hold every word of phrase
// (after stemming, "chart"/"tile" and articles left out): "the status chart" is the one
// tile about status, or each of several.
func described(spec *Spec, phrase string) []PathTile {
	var want []string
	for _, w := range wordsOf(phrase) {
		if !tileNoise[w] {
			want = append(want, w)
		}
	}
	if len(want) == 0 {
		return nil
	}
	// What a tile is about (its title and axes) first; a table's columns only when no tile is
	// about the words.
	for _, tables := range []bool{false, true} {
		var out []PathTile
		for _, pt := range spec.Tiles() {
			t := pt.Tile
			about := append([]string{t.Title, t.ID, t.Type, t.Encoding.X, t.Encoding.Series, t.Encoding.Value}, t.Encoding.Y...)
			if tables {
				about = append(about, t.Encoding.Columns...)
			}
			have := wordsOf(strings.Join(about, " "))
			if !slices.ContainsFunc(want, func(w string) bool { return !slices.Contains(have, w) }) {
				out = append(out, pt)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// whichTile is the refusal for a tile phrase that names none or several tiles.
func whichTile(spec *Spec, phrase string) error {
	ts := described(spec, phrase)
	if len(ts) > 1 {
		var names, asks []string
		for _, pt := range ts {
			names = append(names, fmt.Sprintf("%q", pt.Tile.Title))
			asks = append(asks, "make the "+pt.Tile.Title+" chart ...")
		}
		return &NotUnderstood{Reason: fmt.Sprintf("%q could be %s: name one by its title", phrase, strings.Join(names, " or ")), Suggestions: asks}
	}
	return notUnderstood(fmt.Sprintf("no tile is titled or about %q", phrase), titles(spec)...)
}

var tileNoise = map[string]bool{"the": true, "a": true, "an": true, "chart": true, "tile": true, "graph": true, "plot": true, "visual": true, "one": true, "of": true}

func wordsOf(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		out = append(out, lexicon.Stem(w))
	}
	return out
}

func titles(spec *Spec) []string {
	var out []string
	for _, pt := range spec.Tiles() {
		out = append(out, "remove the "+pt.Tile.Title+" tile")
	}
	return out
}

func indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }

// scoped is the tile in scope, or every tile.
func scoped(spec *Spec, target *Tile) []*Tile {
	if target != nil {
		return []*Tile{target}
	}
	var out []*Tile
	for _, pt := range spec.Tiles() {
		out = append(out, pt.Tile)
	}
	return out
}

func removeTile(spec *Spec, path string) {
	m := pathRE.FindStringSubmatch(path)
	i, _ := strconv.Atoi(m[1])
	j, _ := strconv.Atoi(m[2])
	items := slices.Delete(spec.Rows[i].Items, j, j+1)
	if len(items) == 0 {
		spec.Rows = slices.Delete(spec.Rows, i, i+1)
		return
	}
	// The row's tiles share the grid again.
	for k := range items {
		items[k].Width = 12 / len(items)
	}
	spec.Rows[i].Items = items
}

// changeType redraws a tile as typ where its columns allow it.
func changeType(t *Tile, typ string, r *Refinement) error {
	e := &t.Encoding
	old := t.Type
	switch typ {
	case "table":
		*e = Encoding{}
	case "pie", "donut":
		switch {
		case e.X != "" && e.Value != "":
		case e.X != "" && len(e.Y) == 1 && e.TimeGrain == "" && t.Type != "scatter" && t.Type != "histogram":
			e.Value, e.Y = e.Y[0], nil
		default:
			return notUnderstood(fmt.Sprintf("%q cannot be a %s: a %s shows one value per label", t.Title, typ, typ))
		}
	case "bar", "line", "area", "stacked_bar":
		switch {
		case e.X != "" && len(e.Y) > 0:
		case e.X != "" && e.Value != "":
			e.Y, e.Value = []string{e.Value}, ""
		default:
			return notUnderstood(fmt.Sprintf("%q cannot be a %s chart: it has no x and y columns", t.Title, strings.ReplaceAll(typ, "_", " ")))
		}
		if typ == "stacked_bar" && e.Series == "" {
			return notUnderstood(fmt.Sprintf("%q has no series column to stack", t.Title))
		}
	default:
		return notUnderstood(fmt.Sprintf("%q cannot become a %s: its query answers other columns", t.Title, typ))
	}
	if old == "kpi" {
		return notUnderstood(fmt.Sprintf("%q is a single number; add a chart instead (\"add a chart of ... by ...\")", t.Title))
	}
	t.Type = typ
	r.Changes = append(r.Changes, fmt.Sprintf("%q is now a %s", t.Title, strings.ReplaceAll(typ, "_", " ")))
	return nil
}

// column finds the column a phrase names in the sources: by name, label or an alias its
// owner gave it, singular or plural, or a named measure; nil if none.
func column(in Input, phrase string) (*analysed, *Column) {
	phrase = strings.TrimSpace(phrase)
	want := strings.Join(words(phrase), " ")
	names := func(c Column) bool {
		for _, n := range append([]string{c.Name, label(c)}, c.Aliases...) {
			if n = strings.Join(words(n), " "); n == want || Singular(n) == Singular(want) {
				return true
			}
		}
		return false
	}
	for i := range in.Sources {
		a := analyse(&in, &in.Sources[i])
		for j := range a.Columns {
			if names(a.Columns[j]) {
				return a, &a.Columns[j]
			}
		}
		for j := range a.Measures {
			if names(a.Measures[j]) {
				return a, &a.Measures[j]
			}
		}
	}
	return nil, nil
}

// addChart adds a tile of a measure (or the count) by a category or a time grain.
func addChart(spec *Spec, in Input, typ, what, by string, r *Refinement) error {
	what = strings.TrimSpace(what)
	src, measure, fn, err := chartMeasure(&in, what)
	if err != nil {
		return err
	}
	src, dim, grain, err := chartDimension(&in, src, what, by)
	if err != nil {
		return err
	}
	value, alias, title := "count(*)", "count", capital(src.Label)
	aggFn, arg := "count", ""
	if measure != nil {
		arg = q(measure.Name)
		if measure.Expr != "" { // a named measure: its value per row
			arg = measure.Expr
		}
		aggFn, value = fn, fn+"("+arg+")" // alias and title are the function's, below
		if fn != "sum" && fn != "avg" {
			alias, title = fn+"_"+measure.Name, capital(map[string]string{"max": "largest ", "min": "smallest "}[fn]+label(*measure))
		} else if fn == "avg" {
			alias, title = "average_"+measure.Name, "Average "+label(*measure)
		} else {
			alias, title = "total_"+measure.Name, "Total "+label(*measure)
		}
	}
	// The dashboard's filter on this source applies to the new tile as to the generated ones.
	filter, filterCol := sourceFilter(spec, src.Ref)
	t := Tile{Width: 12, Height: 2}
	switch {
	case dim != nil && (dim.Type == "date" || dim.Type == "timestamptz") || grain != "":
		col := src.time
		if dim != nil {
			col = dim
		}
		if col == nil {
			return notUnderstood(fmt.Sprintf("%s has no date column to chart per %s", src.Label, grain))
		}
		if grain == "" {
			grain = src.grain
			if grain == "" || col != src.time {
				grain = "month"
			}
		}
		period := "date_trunc('" + grain + "', " + q(col.Name) + ")"
		t.Type, t.Title = cmpOr(typ, "line"), title+" per "+grain
		t.Query.SQL = "SELECT " + period + " AS period, " + value + " AS " + q(alias) + ", max(" + q(col.Name) + ") AS latest\nFROM " + src.Ref +
			src.where("", filter, filterCol, q(col.Name)+" IS NOT NULL") + "\nGROUP BY 1\nORDER BY 1"
		t.Encoding = Encoding{X: "period", Y: []string{alias}, TimeGrain: grain, Latest: "latest"}
	default:
		t.Type, t.Title = cmpOr(typ, "bar"), title+" by "+label(*dim)
		t.Query.SQL = topN(q(dim.Name), aggFn, arg, alias, dim.Name, src.Ref+src.where("", filter, filterCol))
		t.Encoding = Encoding{X: dim.Name, Y: []string{alias}, TopN: 10, Sort: &Sort{Field: alias, Direction: "desc"}}
		if t.Type == "pie" || t.Type == "donut" {
			t.Encoding.Value, t.Encoding.Y = alias, nil
		}
	}
	if t.Type == "stacked_bar" {
		return notUnderstood("a stacked bar needs a series column; ask for a bar chart, or write the tile's SQL")
	}
	t.ID = newTileID(spec, t.Title)
	spec.Rows = append(spec.Rows, Row{Items: []Tile{t}})
	r.Changes = append(r.Changes, fmt.Sprintf("added %q (%s)", t.Title, strings.ReplaceAll(t.Type, "_", " ")))
	return nil
}

// sourceFilter is the dashboard's category filter on a column of source ref and the column,
// or nil.
func sourceFilter(spec *Spec, ref string) (*Filter, string) {
	for i, f := range spec.Filters {
		if col, ok := strings.CutPrefix(f.Column, ref+"."); ok && f.Type == "category" && !strings.Contains(col, ".") {
			return &spec.Filters[i], col
		}
	}
	return nil, ""
}

// chartMeasure reads what a new chart shows: an aggregate word and a numeric column ("total
// amount"), the count, or a dataset's name (its count); src is nil when only the count is asked.
func chartMeasure(in *Input, what string) (src *analysed, measure *Column, fn string, err error) {
	// the words of the aggregates are the plain-English engine's ("total", "average of", ...)
	for _, a := range nlsql.Aggs {
		for _, w := range append(a.Words(), map[nlsql.Agg]string{nlsql.Count: "number"}[a]) {
			if w == "" {
				continue
			}
			if rest, ok := strings.CutPrefix(what, w+" of "); ok {
				fn, what = string(a), rest
			} else if rest, ok := strings.CutPrefix(what, w+" "); ok && fn == "" {
				fn, what = string(a), rest
			}
		}
		if fn != "" {
			break
		}
	}
	if what == "count" || what == "records" || what == "rows" {
		return nil, nil, "count", nil
	}
	a, c := column(*in, what)
	switch {
	case c != nil && numericType(c.Type):
		if fn == "" || fn == "count" {
			fn, _, _ = aggregate(*c)
		}
		if fn == "sum" && c.Role == ingest.RoleValue && c.DefaultAgg != "sum" {
			return nil, nil, "", notUnderstood(fmt.Sprintf("%s is a value per unit or a rate: its total means nothing; chart its average", label(*c)))
		}
		return a, c, fn, nil
	case c != nil:
		return nil, nil, "", notUnderstood(fmt.Sprintf("%s is not a number; chart a number (amount, quantity) or the count of records by it", what))
	}
	// "orders by region": the count of a source named so.
	for i := range in.Sources {
		s := &in.Sources[i]
		if strings.EqualFold(s.Label, what) || Singular(strings.ToLower(s.Label)) == Singular(what) || s.Ref == what {
			src, fn = analyse(in, s), "count"
		}
	}
	if src == nil {
		return nil, nil, "", notUnderstood(fmt.Sprintf("no column or dataset is called %q", what), columnNames(*in)...)
	}
	return src, nil, fn, nil
}

// chartDimension reads what a new chart is by: a time grain ("per month") or a column of the
// measure's source; it settles the source when the measure left it open.
func chartDimension(in *Input, src *analysed, what, by string) (*analysed, *Column, string, error) {
	grain := ""
	if g := grainRE.FindString(by); g != "" && strings.TrimSpace(by) == g {
		grain = grainOf(g)
	}
	var dim *Column
	if grain == "" {
		a, c := column(*in, by)
		if c == nil {
			return nil, nil, "", notUnderstood(fmt.Sprintf("no column is called %q", by), columnNames(*in)...)
		}
		if src == nil {
			src = a
		} else if a.Ref != src.Ref {
			return nil, nil, "", notUnderstood(fmt.Sprintf("%s and %s are in different datasets; chart them from one, or write the join as SQL in the tile", what, by))
		}
		dim = c
	} else if src == nil && len(in.Sources) > 0 {
		src = analyse(in, &in.Sources[0])
	}
	if src == nil {
		return nil, nil, "", notUnderstood("name what to chart")
	}
	return src, dim, grain, nil
}

// newTileID is a tile id from title, unique in spec.
func newTileID(spec *Spec, title string) string {
	base := tileIDBase(title)
	id := base
	for n := 2; idTaken(spec, id); n++ {
		id = base + "_" + strconv.Itoa(n)
	}
	return id
}

func cmpOr(a, b string) string {
	if a != "" {
		return strings.ReplaceAll(a, " ", "_")
	}
	return b
}

func idTaken(spec *Spec, id string) bool {
	for _, pt := range spec.Tiles() {
		if pt.Tile.ID == id {
			return true
		}
	}
	return false
}

func columnNames(in Input) []string {
	var out []string
	for _, s := range in.Sources {
		for _, c := range s.Columns {
			out = append(out, s.Label+"."+c.Name)
		}
	}
	if len(out) > 20 {
		out = out[:20]
	}
	return out
}

var fromLine = regexp.MustCompile(`(?m)^([ \t]*)FROM ([a-z0-9_.]+)[ \t]*$`)

// addFilter adds a category filter on a column and binds it in every tile that reads the
// column's dataset in the generated form (FROM <dataset> on its own line); the tiles it
// cannot bind in are named in the warnings.
func addFilter(spec *Spec, in Input, phrase string, r *Refinement) error {
	a, c := column(in, phrase)
	if c == nil {
		return notUnderstood(fmt.Sprintf("no column is called %q", phrase), columnNames(in)...)
	}
	if c.Type != "text" && c.Type != "boolean" && !numericType(c.Type) {
		return notUnderstood(fmt.Sprintf("%s is a %s column; filters pick one value of a text, number or boolean column", c.Name, c.Type))
	}
	f := Filter{ID: c.Name, Label: capital(label(*c)), Type: "category", Parameter: "f_" + c.Name, Column: a.Ref + "." + c.Name, Options: c.Values}
	if numericType(c.Type) {
		f.Type = "number"
	}
	for _, x := range spec.Filters {
		if x.ID == f.ID || x.Parameter == f.Parameter {
			return notUnderstood(fmt.Sprintf("the dashboard already has a filter on %s", c.Name))
		}
	}
	cond := "({{" + f.Parameter + "}}::text IS NULL OR " + q(c.Name) + "::text = {{" + f.Parameter + "}}::text)"
	bound := 0
	for _, pt := range spec.Tiles() {
		t := pt.Tile
		lines := strings.Split(t.Query.SQL, "\n")
		done := false
		for i, l := range lines {
			m := fromLine.FindStringSubmatch(l)
			if m == nil || m[2] != a.Ref {
				continue
			}
			ind := m[1]
			if i+1 < len(lines) && strings.HasPrefix(lines[i+1], ind+"WHERE ") {
				lines[i+1] = ind + "WHERE " + cond + "\n" + ind + "  AND " + strings.TrimPrefix(lines[i+1], ind+"WHERE ")
			} else {
				lines[i] = l + "\n" + ind + "WHERE " + cond
			}
			done = true
			break
		}
		if done {
			t.Query.SQL = strings.Join(lines, "\n")
			bound++
		} else {
			r.Warnings = append(r.Warnings, fmt.Sprintf("the filter on %s does not apply to %q (its query does not read %s as a generated tile does)", c.Name, t.Title, a.Ref))
		}
	}
	if bound == 0 {
		return notUnderstood(fmt.Sprintf("no tile reads %s in a form the filter can be added to; add the condition to the tiles' SQL", a.Ref))
	}
	spec.Filters = append(spec.Filters, f)
	r.Changes = append(r.Changes, fmt.Sprintf("added a filter on %s, applied to %d tile(s)", c.Name, bound))
	return nil
}
