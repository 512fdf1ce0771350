package dashboards

import (
	"sort"
	"strconv"
	"strings"
)

// Suggestion is an intent a dashboard of the sources could cover.
type Suggestion struct {
	Intent string
	Refs   []string // the sources it needs
	Reason string
	score  float64
}

// Suggest proposes intents from the sources' columns and relationships: a measure by a
// category, a measure over time, and a measure of one source by a category of a related one;
// the largest sources first.
func Suggest(in Input) []Suggestion {
	var out []Suggestion
	byRef := map[string]*analysed{}
	for i := range in.Sources {
		a := analyse(&in, &in.Sources[i])
		byRef[a.Ref] = a
		size := float64(a.Rows) / 1e9
		if len(a.measures) > 0 {
			m := a.measures[0]
			_, title, _ := aggregate(m)
			if a.time != nil {
				out = append(out, Suggestion{Intent: title + " of " + a.Label + " over time", Refs: []string{a.Ref}, score: 3 + size,
					Reason: a.Label + " has the measure " + m.Name + " and the date column " + a.time.Name})
			}
			for j, c := range a.categories {
				if j == 2 {
					break
				}
				out = append(out, Suggestion{Intent: title + " by " + label(c), Refs: []string{a.Ref}, score: 2 - float64(j)*0.5 + size,
					Reason: a.Label + " has the measure " + m.Name + " and the category " + c.Name + " (" + itoa(c.Distinct) + " values)"})
			}
		} else if a.time != nil {
			out = append(out, Suggestion{Intent: capital(a.Label) + " over time", Refs: []string{a.Ref}, score: 1 + size,
				Reason: a.Label + " has the date column " + a.time.Name})
		}
	}
	for _, r := range in.Relations {
		from, to := byRef[r.From], byRef[r.To]
		if from == nil || to == nil || len(to.categories) == 0 {
			continue
		}
		c := to.categories[0]
		what := capital(from.Label)
		if len(from.measures) > 0 {
			_, what, _ = aggregate(from.measures[0])
			what = capital(what)
		}
		out = append(out, Suggestion{Intent: what + " by " + strings.ToLower(Singular(to.Label)) + " " + label(c), Refs: []string{from.Ref, to.Ref}, score: 4,
			Reason: from.Label + "." + r.FromColumn + " refers to " + to.Label + "." + r.ToColumn})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].score > out[j].score })
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
