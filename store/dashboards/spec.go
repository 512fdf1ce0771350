// Package dashboards makes dashboards out of datasets: the spec a client draws (rows of tiles
// on a 12-column grid, each with a project query and an encoding), the deterministic
// generator that proposes tiles from the datasets' statistics in the spirit of Metabase's
// X-rays, and the layout that places them.
package dashboards

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Spec is a dashboard's spec (the description's DashboardSpec).
type Spec struct {
	Version     int        `json:"version"`
	Title       string     `json:"title"`
	Description string     `json:"description,omitempty"`
	TimeRange   *TimeRange `json:"time_range,omitempty"`
	Filters     []Filter   `json:"filters,omitempty"`
	Rows        []Row      `json:"rows"`
}

// TimeRange is the dashboard's default time window.
type TimeRange struct {
	Default string `json:"default"`
}

// Filter is a value the viewer picks, bound to {{Parameter}} in the tiles that use it.
type Filter struct {
	ID        string `json:"id"`
	Label     string `json:"label"`
	Type      string `json:"type"` // category, number, text
	Parameter string `json:"parameter"`
	Column    string `json:"column,omitempty"`
	Options   []any  `json:"options,omitempty"`
	Default   any    `json:"default,omitempty"`
}

// Row is a row of the grid.
type Row struct {
	Items []Tile `json:"items"`
}

// Tile is one chart, number or table.
type Tile struct {
	ID          string   `json:"id"`
	Title       string   `json:"title"`
	Description string   `json:"description,omitempty"`
	Type        string   `json:"type"`
	Query       Query    `json:"query"`
	Encoding    Encoding `json:"encoding"`
	Width       int      `json:"width"`
	Height      int      `json:"height,omitempty"`
}

// Query is a tile's project query.
type Query struct {
	SQL        string         `json:"sql"`
	Parameters map[string]any `json:"parameters,omitempty"`
}

// Encoding says which result columns the chart uses.
type Encoding struct {
	X         string   `json:"x,omitempty"`
	XEnd      string   `json:"x_end,omitempty"`
	Y         []string `json:"y,omitempty"`
	Series    string   `json:"series,omitempty"`
	Value     string   `json:"value,omitempty"`
	Columns   []string `json:"columns,omitempty"`
	TimeGrain string   `json:"time_grain,omitempty"`
	// Latest is the column holding each period's latest instant: the last period is partial
	// when it ends before the period does.
	Latest  string `json:"latest,omitempty"`
	Sort    *Sort  `json:"sort,omitempty"`
	TopN    int    `json:"top_n,omitempty"`
	Format  string `json:"format,omitempty"`
	Stacked bool   `json:"stacked,omitempty"`
}

// Sort orders a tile's rows.
type Sort struct {
	Field     string `json:"field"`
	Direction string `json:"direction"`
}

// Tiles lists the spec's tiles with their paths, in reading order.
func (s *Spec) Tiles() []PathTile {
	var out []PathTile
	for i := range s.Rows {
		for j := range s.Rows[i].Items {
			out = append(out, PathTile{Path: TilePath(i, j), Tile: &s.Rows[i].Items[j]})
		}
	}
	return out
}

// PathTile is a tile and its path.
type PathTile struct {
	Path string
	Tile *Tile
}

// TilePath is a tile's dotted path: rows.<i>.items.<j>.
func TilePath(row, item int) string {
	return "rows." + strconv.Itoa(row) + ".items." + strconv.Itoa(item)
}

// TileTypes are the kinds of tile a client draws.
var TileTypes = []string{"kpi", "line", "area", "bar", "stacked_bar", "pie", "donut", "scatter", "histogram", "table"}

var idRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

var pathRE = regexp.MustCompile(`^rows\.([0-9]+)\.items\.([0-9]+)$`)

// Tile is the tile at path, or nil.
func (s *Spec) Tile(path string) *Tile {
	m := pathRE.FindStringSubmatch(path)
	if m == nil {
		return nil
	}
	i, _ := strconv.Atoi(m[1])
	j, _ := strconv.Atoi(m[2])
	if i >= len(s.Rows) || j >= len(s.Rows[i].Items) {
		return nil
	}
	return &s.Rows[i].Items[j]
}

// Problem is what is wrong with a spec, at a field path (body.spec.rows.0.items.1.width).
type Problem struct {
	Field, Code, Message string
}

// Check finds what the schema cannot say: tile and filter ids unique, a row's widths within
// the grid, each encoding naming what its chart type draws with, filters' parameters
// distinct from the time range's.
func (s *Spec) Check(prefix string) []Problem {
	var out []Problem
	add := func(field, code, msg string) { out = append(out, Problem{prefix + field, code, msg}) }
	ids := map[string]string{}
	for i, r := range s.Rows {
		width := 0
		for j, t := range r.Items {
			p := "rows." + strconv.Itoa(i) + ".items." + strconv.Itoa(j)
			if prev, ok := ids[t.ID]; ok {
				add(p+".id", "duplicate", fmt.Sprintf("tile id %q is also the id of %s", t.ID, prev))
			}
			ids[t.ID] = p
			if !idRE.MatchString(t.ID) {
				add(p+".id", "pattern", "a tile id is lower-case letters, digits and _, starting with a letter")
			}
			if !slices.Contains(TileTypes, t.Type) {
				add(p+".type", "enum", "a tile's type is one of "+strings.Join(TileTypes, ", "))
			}
			if t.Width < 1 || t.Width > 12 {
				add(p+".width", "maximum", "a tile is 1 to 12 columns wide")
			}
			if strings.TrimSpace(t.Title) == "" || strings.TrimSpace(t.Query.SQL) == "" {
				add(p, "required", "a tile has a title and a query")
			}
			width += t.Width
			e := t.Encoding
			need := func(field, v string) {
				if v == "" {
					add(p+".encoding."+field, "required", "a "+t.Type+" tile names its "+field+" column")
				}
			}
			switch t.Type {
			case "kpi":
				need("value", e.Value)
			case "line", "area", "bar", "stacked_bar", "scatter", "histogram":
				need("x", e.X)
				if len(e.Y) == 0 {
					add(p+".encoding.y", "required", "a "+t.Type+" tile names its y column(s)")
				}
				if t.Type == "stacked_bar" {
					need("series", e.Series)
				}
			case "pie", "donut":
				need("x", e.X)
				need("value", e.Value)
			}
			if e.Latest != "" && e.TimeGrain == "" {
				add(p+".encoding.latest", "requires", "latest goes with time_grain: it marks the last period partial")
			}
			for _, name := range []string{TimeFrom, TimeTo} {
				if _, ok := t.Query.Parameters[name]; ok {
					add(p+".query.parameters."+name, "reserved", "{{"+name+"}} is bound from the dashboard's time range")
				}
			}
		}
		if width > 12 {
			add("rows."+strconv.Itoa(i), "maximum", fmt.Sprintf("the row's tiles are %d columns wide; the grid has 12", width))
		}
	}
	params := map[string]bool{TimeFrom: true, TimeTo: true}
	fids := map[string]bool{}
	for i, f := range s.Filters {
		p := "filters." + strconv.Itoa(i)
		if fids[f.ID] {
			add(p+".id", "duplicate", "filter id "+strconv.Quote(f.ID)+" is used twice")
		}
		fids[f.ID] = true
		if params[f.Parameter] {
			add(p+".parameter", "duplicate", "parameter "+strconv.Quote(f.Parameter)+" is taken")
		}
		params[f.Parameter] = true
	}
	if s.TimeRange != nil {
		if _, _, err := ParseTimeRange(s.TimeRange.Default, fixedNow); err != nil {
			add("time_range.default", "invalid_format", err.Error())
		}
	}
	return out
}

// Placeholders a tile's query uses for the dashboard's time range.
const (
	TimeFrom = "time_from"
	TimeTo   = "time_to"
)

// Uses reports whether sql has the placeholder {{name}} (spaces inside the braces allowed).
func Uses(sql, name string) bool {
	for i := 0; ; {
		k := strings.Index(sql[i:], "{{")
		if k < 0 {
			return false
		}
		i += k + 2
		end := strings.Index(sql[i:], "}}")
		if end < 0 {
			return false
		}
		if strings.TrimSpace(sql[i:i+end]) == name {
			return true
		}
	}
}
