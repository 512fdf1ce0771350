package dashboards

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Chat is a model behind a chat completions API (nlsql.Model.Chat).
type Chat func(ctx context.Context, system, user string) (string, error)

const draftSystem = `You design dashboards over a project's tables. Answer with JSON only:
{"title": "...", "tiles": [{"title": "...", "type": "kpi|line|area|bar|pie|donut|scatter|histogram|table",
"sql": "one PostgreSQL SELECT over the listed tables, written exactly as listed",
"encoding": {"x": "result column", "y": ["result column"], "value": "result column", "time_grain": "day|week|month|quarter|year"}}]}
A kpi answers one row with its number in "value"; line, area and bar need x and y; pie and donut need x and value.
Never sum or average identifiers, keys, codes or years. At most 15 tiles.`

// DraftPrompt describes the sources to the model: tables, columns with their types and
// statistics, and relationships.
func DraftPrompt(in Input, intent string) string {
	var b strings.Builder
	b.WriteString("Tables:\n")
	for _, s := range in.Sources {
		fmt.Fprintf(&b, "- %s (%q, %d rows)\n", s.Ref, s.Label, s.Rows)
		for _, c := range s.Columns {
			fmt.Fprintf(&b, "    %s %s, %d distinct, %d empty", c.Name, c.Type, c.Distinct, c.Nulls)
			if len(c.Min) > 0 && len(c.Max) > 0 {
				fmt.Fprintf(&b, ", from %s to %s", c.Min, c.Max)
			}
			b.WriteString("\n")
		}
	}
	if len(in.Relations) > 0 {
		b.WriteString("Relationships:\n")
		for _, r := range in.Relations {
			fmt.Fprintf(&b, "- %s.%s references %s.%s\n", r.From, r.FromColumn, r.To, r.ToColumn)
		}
	}
	if intent != "" {
		fmt.Fprintf(&b, "The dashboard is for: %s\n", intent)
	}
	return b.String()
}

var jsonBlock = regexp.MustCompile("(?s)```(?:json)?\\s*(.*?)```")

// Draft has the model propose tiles. They are only proposals: each passes the checks and a
// run like any tile (the caller's validation), ranked before the generator's candidates, so
// that what the model gets wrong is replaced by the generator's choice for that place.
func Draft(ctx context.Context, chat Chat, in Input, intent string) ([]Candidate, error) {
	answer, err := chat(ctx, draftSystem, DraftPrompt(in, intent))
	if err != nil {
		return nil, err
	}
	if m := jsonBlock.FindStringSubmatch(answer); m != nil {
		answer = m[1]
	}
	var out struct {
		Tiles []struct {
			Title    string   `json:"title"`
			Type     string   `json:"type"`
			SQL      string   `json:"sql"`
			Encoding Encoding `json:"encoding"`
		} `json:"tiles"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(answer)), &out); err != nil {
		return nil, fmt.Errorf("the model's answer is not the JSON asked for: %v", err)
	}
	var cands []Candidate
	for i, t := range out.Tiles {
		if i == MaxTiles {
			break
		}
		group := map[string]string{"kpi": "kpi", "line": "time", "area": "time", "table": "table", "histogram": "distribution",
			"scatter": "distribution", "bar": "breakdown", "pie": "breakdown", "donut": "breakdown"}[t.Type]
		if group == "" || strings.TrimSpace(t.Title) == "" || strings.TrimSpace(t.SQL) == "" {
			continue // not a tile this spec can hold: the generator's fills its place
		}
		tile := Tile{ID: fmt.Sprintf("model_%d", i+1), Title: strings.TrimSpace(t.Title), Type: t.Type, Width: 6,
			Query: Query{SQL: strings.TrimSuffix(strings.TrimSpace(t.SQL), ";")}, Encoding: t.Encoding}
		if len(tile.Title) > 200 {
			tile.Title = tile.Title[:200]
		}
		spec := Spec{Rows: []Row{{Items: []Tile{tile}}}}
		if len(spec.Check("")) > 0 {
			continue
		}
		cands = append(cands, Candidate{Tile: tile, Group: group, Score: 1000 - float64(i)})
	}
	if len(cands) == 0 {
		return nil, errors.New("the model proposed no usable tile")
	}
	return cands, nil
}

const reviseSystem = `You edit dashboards. You get the tables, the dashboard's spec as JSON and what the user asks.
Answer with JSON only: {"spec": <the whole revised spec, in the same format>, "changes": ["what you changed, a sentence each"]}.
Keep every tile the user did not ask to change exactly as it is. Tile SQL is one PostgreSQL SELECT over the listed tables.`

// Revise has the model apply prompt to spec (scope "tile": only the tile at path). The
// revision is only a proposal: the caller holds it to what an edit must pass.
func Revise(ctx context.Context, chat Chat, spec Spec, prompt, scope, path string, in Input) (*Spec, []string, error) {
	cur, _ := json.Marshal(spec)
	ask := "Change the whole dashboard: "
	if scope == "tile" {
		ask = "Change only the tile at " + path + ": "
	}
	answer, err := chat(ctx, reviseSystem, DraftPrompt(in, "")+"Spec:\n"+string(cur)+"\n"+ask+prompt+"\n")
	if err != nil {
		return nil, nil, err
	}
	if m := jsonBlock.FindStringSubmatch(answer); m != nil {
		answer = m[1]
	}
	var out struct {
		Spec    json.RawMessage `json:"spec"`
		Changes []string        `json:"changes"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(answer)), &out); err != nil || len(out.Spec) == 0 {
		return nil, nil, fmt.Errorf("the model's answer is not the JSON asked for")
	}
	var revised Spec
	dec := json.NewDecoder(strings.NewReader(string(out.Spec)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&revised); err != nil {
		return nil, nil, fmt.Errorf("the model's spec does not read: %v", err)
	}
	if revised.Version != 1 || revised.Title == "" {
		return nil, nil, errors.New("the model's spec lacks its version or title")
	}
	if p := revised.Check(""); len(p) > 0 {
		return nil, nil, fmt.Errorf("the model's spec has problems: %s %s", p[0].Field, p[0].Message)
	}
	if len(out.Changes) == 0 {
		out.Changes = []string{"revised by the model"}
	}
	return &revised, out.Changes, nil
}
