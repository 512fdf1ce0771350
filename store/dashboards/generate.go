package dashboards

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"dataplatform/store/ingest"

	"github.com/lib/pq"
)

// Column is a source's column as the generator sees it: its type and what the analysis
// found (distinct values, nulls, range).
type Column struct {
	Name     string // identifier in the table
	Label    string // as people wrote it ("Order Date")
	Type     ingest.Type
	Distinct int64
	Nulls    int64
	Min, Max json.RawMessage // JSON of the smallest and largest value, when known
	Key      bool            // a primary key or one end of a relationship
	Values   []any           // a few known values (for a filter's options)
	// DefaultAgg is how its owner said its values combine (sum, avg, min, max; none: never),
	// or "" for the generator to decide by its role
	DefaultAgg string
	// Role is what the column is for (ingest.InferRoles, or set by a person): amounts and
	// counts are totalled, values averaged, identifiers never measured. Empty: inferred from
	// the source's columns when it is analysed.
	Role ingest.Role
	// Aliases are other names its owner gave it ("revenue" for price): refine reads them.
	Aliases []string
	// Expr is the SQL of a named measure's value per row (ingest.MeasureValue); "" for a
	// column of the table.
	Expr string
}

// Source is a dataset (or one table of a connected one, or a view) the dashboard reads.
type Source struct {
	Ref     string // how project SQL names it
	ID      string // the dataset's (or view's) id
	Label   string // its display name
	Rows    int64
	Columns []Column
	// Measures are its named measures (ingest.Measure), as numbers refine can chart by name;
	// the generator does not pick them itself.
	Measures []Column
	Rank     float64 // how well it matches the intent (project form)
}

// Relation is a relationship between two sources: From.FromColumn → To.ToColumn.
type Relation struct {
	From, FromColumn, To, ToColumn string // source refs and column names
}

// Input is what a dashboard is generated from.
type Input struct {
	Title     string
	Sources   []Source
	Relations []Relation
	Intent    []string // the intent's words: columns they name rank first
	Filter    bool     // offer a filter on the main category (the dataset form)
}

// Candidate is a proposed tile and how much it is worth showing.
type Candidate struct {
	Tile  Tile
	Group string // kpi, time, breakdown, distribution, table
	Score float64
}

// MaxTiles is the most tiles a generated dashboard has.
const MaxTiles = 15

// roles of columns.
const (
	roleKey      = "key"
	roleMeasure  = "measure"
	roleTime     = "time"
	roleCategory = "category"
	roleBoolean  = "boolean"
	roleOther    = "other"
)

var (
	calendarWords = []string{"year", "month", "day", "week", "quarter", "hour", "minute", "weekday", "dow", "yr"}
	geoWords      = []string{"country", "state", "region", "city", "province", "continent", "county", "territory", "location", "market"}
	timeWords     = []string{"date", "time", "created", "ordered", "order", "timestamp", "at", "day", "when", "started", "occurred", "purchased", "signup"}
	// Dates that describe an entity rather than when something happened.
	attributeDates = []string{"birth", "dob", "birthday", "expiry", "expires", "expiration", "deleted", "updated", "modified"}
)

func words(name string) []string {
	return strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') })
}

func hasWord(name string, set []string) bool {
	for _, w := range words(name) {
		if slices.Contains(set, w) {
			return true
		}
	}
	return false
}

// withRoles is cols with a role on each (ingest.InferRoles over the source's columns with
// what the analysis found of their values); the roles they have are kept.
func withRoles(cols []Column, rows int64) []Column {
	if !slices.ContainsFunc(cols, func(c Column) bool { return c.Role == "" }) {
		return cols
	}
	in := make([]ingest.RoleColumn, len(cols))
	for i, c := range cols {
		in[i] = ingest.RoleColumn{Name: c.Name, Type: c.Type, Key: c.Key, Set: c.Role, Rows: rows, Distinct: c.Distinct, Nulls: c.Nulls}
		if lo, ok := number(c.Min); ok {
			in[i].Min = &lo
		}
		if hi, ok := number(c.Max); ok {
			in[i].Max = &hi
		}
	}
	roles := ingest.InferRoles(in)
	out := slices.Clone(cols)
	for i := range out {
		out[i].Role = roles[i]
	}
	return out
}

func numericType(t ingest.Type) bool {
	return t == ingest.Integer || t == ingest.BigInt || t == ingest.Numeric
}

func number(raw json.RawMessage) (float64, bool) {
	var f float64
	if len(raw) == 0 || json.Unmarshal(raw, &f) != nil {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, false
		}
		v, err := strconv.ParseFloat(s, 64)
		return v, err == nil
	}
	return f, true
}

func instant(raw json.RawMessage) (time.Time, bool) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return time.Time{}, false
	}
	for _, layout := range []string{time.RFC3339Nano, time.DateOnly, "2006-01-02T15:04:05.999999", "2006-01-02 15:04:05.999999-07", "2006-01-02 15:04:05-07"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// role is what a column is for on a dashboard: identifiers (keys, codes, numbers different
// on every row) and calendar numbers are never summed; measures are numbers that vary;
// categories are texts with few values. Without a role, c's is inferred from it alone.
func role(c Column, rows int64) string {
	if c.Role == "" {
		c.Role = withRoles([]Column{c}, rows)[0].Role
	}
	switch {
	case c.Key || c.Type == ingest.UUID || c.Role == ingest.RoleIdentifier:
		return roleKey
	case numericType(c.Type):
		if hasWord(c.Name, calendarWords) || c.Distinct < 2 || c.DefaultAgg == "none" || c.Role == ingest.RoleCategory || c.Role == ingest.RoleText {
			return roleOther
		}
		if c.Type != ingest.Numeric && !c.Role.Adds() {
			lo, okL := number(c.Min)
			hi, okH := number(c.Max)
			if okL && okH && lo >= 1800 && hi <= 2100 && c.Distinct <= 300 {
				return roleOther // year-like
			}
		}
		return roleMeasure
	case c.Type == ingest.Date || c.Type == ingest.Timestamptz:
		lo, okL := instant(c.Min)
		hi, okH := instant(c.Max)
		if !okL || !okH || !hi.After(lo) || hasWord(c.Name, attributeDates) {
			return roleOther
		}
		return roleTime
	case c.Type == ingest.Boolean:
		if c.Distinct < 2 {
			return roleOther
		}
		return roleBoolean
	case c.Type == ingest.Text:
		// A category repeats: text that differs on every row (names, emails) is no breakdown,
		// nor is a mostly empty one (notes): its chart would be of the few rows that have it.
		if c.Distinct >= 2 && c.Distinct <= 50 && c.Distinct < rows-c.Nulls && (rows <= 20 || c.Distinct*2 <= rows) && c.Nulls*2 <= rows {
			return roleCategory
		}
	}
	return roleOther
}

// label is a column's name for people: "order_date" → "order date".
func label(c Column) string {
	l := c.Label
	if l == "" {
		l = c.Name
	}
	return strings.Join(strings.FieldsFunc(l, func(r rune) bool { return r == '_' || r == ' ' }), " ")
}

// capital starts s with a capital letter.
func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Singular of a dataset's label, for "by customer segment".
func Singular(s string) string {
	w := strings.ToLower(s)
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		return s[:len(s)-3] + "y"
	case strings.HasSuffix(w, "ses") || strings.HasSuffix(w, "xes"):
		return s[:len(s)-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && len(w) > 3:
		return s[:len(s)-1]
	}
	return s
}

func q(name string) string { return pq.QuoteIdentifier(name) }

// analysed is a source with its columns sorted into roles, best first.
type analysed struct {
	*Source
	measures, categories, booleans []Column
	time                           *Column
	grain                          string
}

func (in *Input) intentBoost(name string) float64 {
	b := 0.0
	for _, w := range words(name) {
		for _, iw := range in.Intent {
			if w == iw || Singular(w) == Singular(iw) {
				b += 15
			}
		}
	}
	return b
}

func analyse(in *Input, s *Source) *analysed {
	src := *s
	src.Columns = withRoles(s.Columns, s.Rows)
	a := &analysed{Source: &src}
	var times []Column
	for _, c := range a.Columns {
		switch role(c, a.Rows) {
		case roleMeasure:
			a.measures = append(a.measures, c)
		case roleCategory:
			a.categories = append(a.categories, c)
		case roleBoolean:
			a.booleans = append(a.booleans, c)
		case roleTime:
			times = append(times, c)
		}
	}
	measureScore := func(c Column) float64 {
		v := in.intentBoost(c.Name) + float64(c.Distinct)/float64(max(s.Rows, 1))
		if c.Role.Adds() {
			v += 10
		}
		return v - float64(c.Nulls)/float64(max(s.Rows, 1))*5
	}
	sort.SliceStable(a.measures, func(i, j int) bool { return measureScore(a.measures[i]) > measureScore(a.measures[j]) })
	catScore := func(c Column) float64 {
		v := in.intentBoost(c.Name) - float64(c.Distinct)/10 - float64(c.Nulls)/float64(max(s.Rows, 1))*5
		if hasWord(c.Name, geoWords) {
			v += 5
		}
		return v
	}
	sort.SliceStable(a.categories, func(i, j int) bool { return catScore(a.categories[i]) > catScore(a.categories[j]) })
	timeScore := func(c Column) float64 {
		v := in.intentBoost(c.Name) - float64(c.Nulls)/float64(max(s.Rows, 1))*10
		if hasWord(c.Name, timeWords) {
			v += 5
		}
		return v
	}
	sort.SliceStable(times, func(i, j int) bool { return timeScore(times[i]) > timeScore(times[j]) })
	if len(times) > 0 {
		a.time = &times[0]
		lo, _ := instant(a.time.Min)
		hi, _ := instant(a.time.Max)
		a.grain = Grain(hi.Sub(lo))
	}
	return a
}

// Grain is the time grain for a span of time: about 10 to 100 points on a line.
func Grain(span time.Duration) string {
	day := 24 * time.Hour
	switch {
	case span <= 3*day:
		return "hour"
	case span <= 90*day:
		return "day"
	case span <= 2*365*day:
		return "week"
	case span <= 8*365*day:
		return "month"
	case span <= 25*365*day:
		return "quarter"
	}
	return "year"
}

// where is the conditions every tile of a source takes: the dashboard's time range on its
// time column and the filter on its category, for the table alias (empty: none).
func (a *analysed) where(alias string, filter *Filter, filterCol string, extra ...string) string {
	col := func(n string) string {
		if alias != "" {
			return alias + "." + q(n)
		}
		return q(n)
	}
	conds := append([]string{}, extra...)
	if a.time != nil {
		t := col(a.time.Name)
		conds = append(conds, "({{"+TimeFrom+"}}::timestamptz IS NULL OR "+t+" >= {{"+TimeFrom+"}}::timestamptz)",
			"({{"+TimeTo+"}}::timestamptz IS NULL OR "+t+" < {{"+TimeTo+"}}::timestamptz)")
	}
	if filter != nil && filterCol != "" {
		conds = append(conds, "({{"+filter.Parameter+"}}::text IS NULL OR "+col(filterCol)+"::text = {{"+filter.Parameter+"}}::text)")
	}
	if len(conds) == 0 {
		return ""
	}
	return "\nWHERE " + strings.Join(conds, "\n  AND ")
}

// aggregate is how a measure combines: what its owner said, else by its role — totals for
// amounts and counts (a rental's price, a quantity), averages for values (a unit price
// beside a quantity, a rate, a rating, an age).
func aggregate(c Column) (fn, title, alias string) {
	switch c.DefaultAgg {
	case "avg":
		return "avg", "Average " + label(c), "average_" + c.Name
	case "min":
		return "min", "Lowest " + label(c), "lowest_" + c.Name
	case "max":
		return "max", "Highest " + label(c), "highest_" + c.Name
	}
	if c.Role == "" {
		c.Role = withRoles([]Column{c}, 0)[0].Role // a column alone
	}
	if c.DefaultAgg == "sum" || c.Role.Adds() {
		if l := label(c); strings.HasPrefix(strings.ToLower(l), "total") {
			return "sum", capital(l), "total_" + c.Name // not "Total total"
		}
		return "sum", "Total " + label(c), "total_" + c.Name
	}
	return "avg", "Average " + label(c), "average_" + c.Name
}

// MaxOptions is the most values a category filter lists.
const MaxOptions = 100

// OptionsTile is the query of every value of a category filter's column, sorted, one more
// than MaxOptions at most; nil for another kind of filter.
func OptionsTile(f Filter) *Tile {
	ref, ok := strings.CutSuffix(f.Column, "."+f.ID)
	if f.Type != "category" || !ok || ref == "" {
		return nil
	}
	return &Tile{ID: "options_" + f.ID, Title: f.Label, Type: "table", Query: Query{SQL: "SELECT DISTINCT " + q(f.ID) + " AS value\nFROM " + ref +
		"\nWHERE " + q(f.ID) + " IS NOT NULL\nORDER BY 1\nLIMIT " + strconv.Itoa(MaxOptions+1)}}
}

// Propose lists the tiles worth showing for in, and the filters they take.
func Propose(in Input) ([]Candidate, []Filter) {
	p := &proposer{in: &in, ids: map[string]int{}}
	multi := len(in.Sources) > 1
	as := make([]*analysed, len(in.Sources))
	byRef := map[string]*analysed{}
	for i := range in.Sources {
		as[i] = analyse(&in, &in.Sources[i])
		byRef[as[i].Ref] = as[i]
	}
	for si, a := range as {
		// The first source (the intent's best) leads; the others follow.
		s := &sourceTiles{proposer: p, a: a, weight: 1.0 - float64(si)*0.08 + a.Rank*0.05, name: a.Label}
		if multi {
			s.prefix = a.Ref + "_"
		}
		if in.Filter && !multi && len(a.categories) > 0 {
			s.filterOn(a.categories[0])
		}
		s.kpis()
		s.timeSeries()
		s.breakdowns()
		s.distributions()
		s.latest()
	}
	p.acrossRelations(byRef)
	sort.SliceStable(p.out, func(i, j int) bool { return p.out[i].Score > p.out[j].Score })
	return p.out, p.filters
}

// proposer collects the candidate tiles and filters of one Propose.
type proposer struct {
	in      *Input
	out     []Candidate
	filters []Filter
	ids     map[string]int
}

// id is base as a tile id: lower-case letters, digits and _, unique among the candidates.
func (p *proposer) id(base string) string {
	base = tileIDBase(base)
	if len(base) > 56 {
		base = base[:56]
	}
	p.ids[base]++
	if p.ids[base] > 1 {
		return base + "_" + strconv.Itoa(p.ids[base])
	}
	return base
}

func (p *proposer) add(group string, score float64, t Tile) {
	t.ID = p.id(t.ID)
	p.out = append(p.out, Candidate{Tile: t, Group: group, Score: score})
}

// tileIDBase is s as the start of a tile id: lower-case letters, digits and _, starting
// with a letter.
func tileIDBase(s string) string {
	base := strings.Trim(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, strings.ToLower(s)), "_")
	if base == "" || base[0] < 'a' || base[0] > 'z' {
		base = "t_" + base
	}
	return base
}

// sourceTiles proposes the tiles of one source.
type sourceTiles struct {
	*proposer
	a            *analysed
	weight       float64
	name, prefix string
	filter       *Filter
	filterCol    string
}

// filterOn makes c the source's filter, which its tiles take.
func (s *sourceTiles) filterOn(c Column) {
	s.filter = &Filter{ID: c.Name, Label: capital(label(c)), Type: "category", Parameter: "f_" + c.Name, Column: s.a.Ref + "." + c.Name,
		Options: c.Values}
	if len(s.filter.Parameter) > 63 {
		s.filter.Parameter = s.filter.Parameter[:63]
	}
	s.filters = append(s.filters, *s.filter)
	s.filterCol = c.Name
}

// w is the source's WHERE clause: live rows, the filter, and extra conditions.
func (s *sourceTiles) w(extra ...string) string {
	return s.a.where("", s.filter, s.filterCol, extra...)
}

func (s *sourceTiles) kpis() {
	a, in := s.a, s.in
	s.add("kpi", 100*s.weight, Tile{ID: s.prefix + "record_count", Title: "Number of " + s.name, Type: "kpi",
		Query:    Query{SQL: "SELECT count(*) AS value\nFROM " + a.Ref + s.w()},
		Encoding: Encoding{Value: "value", Format: "integer"}})
	for i, m := range a.measures {
		if i >= 3 {
			break
		}
		fn, title, _ := aggregate(m)
		s.add("kpi", (90-float64(i)*6)*s.weight+in.intentBoost(m.Name), Tile{ID: s.prefix + fn + "_" + m.Name, Title: capital(title), Type: "kpi",
			Query:    Query{SQL: "SELECT " + fn + "(" + q(m.Name) + ") AS value\nFROM " + a.Ref + s.w()},
			Encoding: Encoding{Value: "value", Format: "number"}})
	}
}

func (s *sourceTiles) timeSeries() {
	a, in := s.a, s.in
	if a.time == nil {
		return
	}
	t := q(a.time.Name)
	period := "date_trunc('" + a.grain + "', " + t + ")"
	s.add("time", 85*s.weight, Tile{ID: s.prefix + "count_per_" + a.grain, Title: capital(s.name) + " per " + a.grain, Type: "line",
		Description: "By " + label(*a.time) + ".",
		Query: Query{SQL: "SELECT " + period + " AS period, count(*) AS count, max(" + t + ") AS latest\nFROM " + a.Ref + s.w(t+" IS NOT NULL") +
			"\nGROUP BY 1\nORDER BY 1"},
		Encoding: Encoding{X: "period", Y: []string{"count"}, TimeGrain: a.grain, Latest: "latest", Format: "integer"}})
	if len(a.measures) > 0 {
		m := a.measures[0]
		fn, title, alias := aggregate(m)
		s.add("time", 84*s.weight+in.intentBoost(m.Name), Tile{ID: s.prefix + alias + "_per_" + a.grain, Title: capital(title) + " per " + a.grain,
			Type: "area", Description: "By " + label(*a.time) + ".",
			Query: Query{SQL: "SELECT " + period + " AS period, " + fn + "(" + q(m.Name) + ") AS " + q(alias) + ", max(" + t + ") AS latest\nFROM " + a.Ref +
				s.w(t+" IS NOT NULL") + "\nGROUP BY 1\nORDER BY 1"},
			Encoding: Encoding{X: "period", Y: []string{alias}, TimeGrain: a.grain, Latest: "latest", Format: "number"}})
	}
}

// breakdowns: the count (and the first measure) by each of the first categories, and the
// share of each of the first booleans.
func (s *sourceTiles) breakdowns() {
	a, in := s.a, s.in
	for i, c := range a.categories {
		if i >= 3 {
			break
		}
		typ := "bar"
		if c.Distinct <= 6 {
			typ = "donut"
			if i%2 == 1 {
				typ = "pie"
			}
		}
		enc := Encoding{X: c.Name, Y: []string{"count"}, Value: "count", TopN: 10, Format: "integer",
			Sort: &Sort{Field: "count", Direction: "desc"}}
		if typ == "bar" {
			enc.Value = ""
		} else {
			enc.Y = nil
		}
		s.add("breakdown", (70-float64(i)*5)*s.weight+in.intentBoost(c.Name), Tile{ID: s.prefix + "count_by_" + c.Name,
			Title: capital(s.name) + " by " + label(c), Type: typ, Description: topNote(c),
			Query: Query{SQL: topN(q(c.Name), "count", "", "count", c.Name, a.Ref+s.w())}, Encoding: enc})
		if len(a.measures) > 0 && i < 2 {
			m := a.measures[0]
			fn, title, alias := aggregate(m)
			s.add("breakdown", (66-float64(i)*5)*s.weight+in.intentBoost(m.Name)+in.intentBoost(c.Name), Tile{ID: s.prefix + alias + "_by_" + c.Name,
				Title: capital(title) + " by " + label(c), Type: "bar", Description: topNote(c),
				Query:    Query{SQL: topN(q(c.Name), fn, q(m.Name), alias, c.Name, a.Ref+s.w())},
				Encoding: Encoding{X: c.Name, Y: []string{alias}, TopN: 10, Format: "number", Sort: &Sort{Field: alias, Direction: "desc"}}})
		}
	}
	for i, b := range a.booleans {
		if i >= 2 {
			break
		}
		s.add("breakdown", (50-float64(i)*5)*s.weight+in.intentBoost(b.Name), Tile{ID: s.prefix + "share_" + b.Name,
			Title: "Share of " + s.name + " by " + label(b), Type: "donut",
			Query: Query{SQL: "SELECT CASE WHEN " + q(b.Name) + " THEN 'Yes' WHEN NOT " + q(b.Name) + " THEN 'No' ELSE '(empty)' END AS " + q(b.Name) +
				", count(*) AS count\nFROM " + a.Ref + s.w() + "\nGROUP BY 1\nORDER BY 2 DESC"},
			Encoding: Encoding{X: b.Name, Value: "count", Format: "integer"}})
	}
}

// distributions: histograms of the first measures, and the first two against each other.
func (s *sourceTiles) distributions() {
	a, in := s.a, s.in
	for i, m := range a.measures {
		if i >= 2 {
			break
		}
		if m.Type != ingest.Numeric && m.Distinct <= 12 {
			continue // a few whole numbers: ten ranges of them say less than the numbers
		}
		x := q(m.Name)
		s.add("distribution", (45-float64(i)*5)*s.weight+in.intentBoost(m.Name), Tile{ID: s.prefix + "distribution_" + m.Name,
			Title: "Distribution of " + label(m), Type: "histogram", Description: "Records in 10 equal ranges of " + label(m) + ".",
			// One scan: the values counted first, their range and buckets over those counts.
			Query: Query{SQL: "SELECT lo + (bucket - 1) * step AS bucket_start, lo + bucket * step AS bucket_end, sum(n) AS count\nFROM (\n" +
				"  SELECT CASE WHEN max(v) OVER () > min(v) OVER () THEN least(width_bucket(v, min(v) OVER (), max(v) OVER (), 10), 10) END AS bucket,\n" +
				"    min(v) OVER () AS lo, (max(v) OVER () - min(v) OVER ()) / 10 AS step, n\n" +
				"  FROM (SELECT " + x + "::float8 AS v, count(*) AS n FROM " + a.Ref + strings.ReplaceAll(s.w(x+" IS NOT NULL"), "\n ", "") + " GROUP BY 1) g\n" +
				") b\nWHERE bucket IS NOT NULL\nGROUP BY bucket, lo, step\nORDER BY bucket"},
			Encoding: Encoding{X: "bucket_start", XEnd: "bucket_end", Y: []string{"count"}, Format: "integer"}})
	}
	if len(a.measures) >= 2 {
		m1, m2 := a.measures[0], a.measures[1]
		s.add("distribution", 30*s.weight, Tile{ID: s.prefix + m1.Name + "_vs_" + m2.Name, Title: capital(label(m1)) + " against " + label(m2),
			Type: "scatter", Description: "Up to 1,000 records.",
			Query: Query{SQL: "SELECT " + q(m1.Name) + ", " + q(m2.Name) + "\nFROM " + a.Ref + s.w(q(m1.Name)+" IS NOT NULL", q(m2.Name)+" IS NOT NULL") +
				"\nLIMIT 1000"},
			Encoding: Encoding{X: m1.Name, Y: []string{m2.Name}}})
	}
}

// latest is a table of the source's latest (or some) records, first eight columns.
func (s *sourceTiles) latest() {
	a := s.a
	var cols []string
	for _, c := range a.Columns {
		if len(cols) < 8 {
			cols = append(cols, c.Name)
		}
	}
	if len(cols) == 0 {
		return
	}
	qc := make([]string, len(cols))
	for i, c := range cols {
		qc[i] = q(c)
	}
	order, title := "", "Some "+s.name
	if a.time != nil {
		order, title = "\nORDER BY "+q(a.time.Name)+" DESC NULLS LAST", "Latest "+s.name
	}
	s.add("table", 20*s.weight, Tile{ID: s.prefix + "latest_records", Title: capital(title), Type: "table",
		Query:    Query{SQL: "SELECT " + strings.Join(qc, ", ") + "\nFROM " + a.Ref + s.w() + order + "\nLIMIT 10"},
		Encoding: Encoding{Columns: cols}})
}

// acrossRelations: a measure (or the count) of the many side by a category of the one side —
// "total amount by customer segment". When several columns of the many side point at the
// one side (start_station, end_station), each tile names the role it joined by ("rentals by
// start station neighborhood").
func (p *proposer) acrossRelations(byRef map[string]*analysed) {
	in := p.in
	roles := map[[2]string]int{}
	for _, r := range in.Relations {
		roles[[2]string{r.From, r.To}]++
	}
	for _, r := range in.Relations {
		from, to := byRef[r.From], byRef[r.To]
		if from == nil || to == nil || from == to || len(to.categories) == 0 {
			continue
		}
		c := to.categories[0]
		on := "\nJOIN " + to.Ref + " t ON t." + q(r.ToColumn) + " = f." + q(r.FromColumn)
		by, id := strings.ToLower(Singular(to.Label))+" "+label(c), from.Ref+"_by_"+to.Ref+"_"+c.Name
		if roles[[2]string{r.From, r.To}] > 1 {
			by, id = strings.Join(words(r.FromColumn), " ")+" "+label(c), from.Ref+"_by_"+r.FromColumn+"_"+c.Name
		}
		base := 75 + in.intentBoost(c.Name) + from.Rank + to.Rank
		p.add("breakdown", base, Tile{ID: id, Title: capital(from.Label) + " by " + by, Type: "bar",
			Description: topNote(c),
			Query:       Query{SQL: topN("t."+q(c.Name), "count", "", "count", c.Name, from.Ref+" f"+on+from.where("f", nil, ""))},
			Encoding:    Encoding{X: c.Name, Y: []string{"count"}, TopN: 10, Format: "integer", Sort: &Sort{Field: "count", Direction: "desc"}}})
		if len(from.measures) > 0 {
			m := from.measures[0]
			fn, title, alias := aggregate(m)
			p.add("breakdown", base+1+in.intentBoost(m.Name), Tile{ID: alias + strings.TrimPrefix(id, from.Ref), Title: capital(title) + " by " + by,
				Type: "bar", Description: topNote(c),
				Query:    Query{SQL: topN("t."+q(c.Name), fn, "f."+q(m.Name), alias, c.Name, from.Ref+" f"+on+from.where("f", nil, ""))},
				Encoding: Encoding{X: c.Name, Y: []string{alias}, TopN: 10, Format: "number", Sort: &Sort{Field: alias, Direction: "desc"}}})
		}
	}
}

func topNote(c Column) string {
	if c.Distinct > 10 {
		return "The 10 largest, the rest as Other."
	}
	return ""
}

// topN is SQL for fn(arg) by category (fn count, sum, avg, min or max; arg "" for count(*)),
// the 10 largest and the rest as Other, largest first. Every bucket's value is computed from
// its rows' partial aggregates — a sum of sums and of counts, the smallest of minima — so that
// Other's average is the average of its rows, not a sum of the groups' averages.
func topN(expr, fn, arg, alias, name, from string) string {
	label := "coalesce(" + expr + "::text, '(empty)')"
	value := fn + "(" + arg + ")"
	parts, outer := "", "sum(value)"
	switch fn {
	case "count":
		if arg == "" {
			value = "count(*)"
		}
	case "avg":
		parts, outer = ", sum("+arg+") AS part_sum, count("+arg+") AS part_count", "sum(part_sum) / nullif(sum(part_count), 0)"
	case "min", "max":
		outer = fn + "(value)"
	}
	return "SELECT CASE WHEN rank <= 10 THEN label ELSE 'Other' END AS " + q(name) + ", " + outer + " AS " + q(alias) + "\nFROM (\n" +
		"  SELECT " + label + " AS label, " + value + " AS value" + parts + ", row_number() OVER (ORDER BY " + value + " DESC NULLS LAST, " + label + ") AS rank\n" +
		"  FROM " + strings.ReplaceAll(from, "\n", "\n  ") + "\n  GROUP BY 1\n) g\nGROUP BY 1\nORDER BY min(rank)"
}

// quotas are the most tiles of each group a dashboard has.
func quotas() map[string]int {
	return map[string]int{"kpi": 4, "time": 2, "table": 1, "breakdown": 8, "distribution": 4}
}

// Wanted picks, best first, the candidates not refused that the layout has room for: at
// most MaxTiles, within each group's quota.
func Wanted(cands []Candidate, refused []bool) []int {
	quota := quotas()
	var out []int
	for i, c := range cands {
		if len(out) == MaxTiles {
			break
		}
		if !refused[i] && quota[c.Group] > 0 {
			quota[c.Group]--
			out = append(out, i)
		}
	}
	return out
}

// Layout places the picked candidates (Wanted) on the grid: a row of KPIs, the time series,
// breakdowns and distributions two by two, and the table of records last.
func Layout(title, description string, picked []Candidate, filters []Filter) Spec {
	group := func(g ...string) []Tile {
		var ts []Tile
		for _, c := range picked {
			if slices.Contains(g, c.Group) {
				ts = append(ts, c.Tile)
			}
		}
		return ts
	}
	s := Spec{Version: 1, Title: title, Description: description, TimeRange: &TimeRange{Default: "all"}, Rows: []Row{}}
	// Filters only for tiles that take them.
	for _, f := range filters {
		for _, c := range picked {
			if Uses(c.Tile.Query.SQL, f.Parameter) {
				s.Filters = append(s.Filters, f)
				break
			}
		}
	}
	if k := group("kpi"); len(k) > 0 {
		for i := range k {
			k[i].Width = 12 / len(k)
		}
		s.Rows = append(s.Rows, Row{Items: k})
	}
	pairs := func(ts []Tile, height int) {
		for i := 0; i < len(ts); i += 2 {
			if i+1 < len(ts) {
				ts[i].Width, ts[i+1].Width = 6, 6
				ts[i].Height, ts[i+1].Height = height, height
				s.Rows = append(s.Rows, Row{Items: ts[i : i+2]})
			} else {
				ts[i].Width, ts[i].Height = 12, height
				s.Rows = append(s.Rows, Row{Items: ts[i : i+1]})
			}
		}
	}
	pairs(group("time"), 2)
	pairs(group("breakdown"), 2)
	pairs(group("distribution"), 2)
	for _, t := range group("table") {
		t.Width, t.Height = 12, 2
		s.Rows = append(s.Rows, Row{Items: []Tile{t}})
	}
	return s
}

// Describe says in a sentence what a generated dashboard covers.
func Describe(in Input) string {
	var names []string
	var rows int64
	for _, s := range in.Sources {
		names = append(names, s.Label)
		rows += s.Rows
	}
	return fmt.Sprintf("Generated from %s (%d records).", strings.Join(names, ", "), rows)
}
