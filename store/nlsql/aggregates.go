package nlsql

// Agg is how an answer combines the rows it reads. One vocabulary: the words that ask for
// each, the SQL it writes and how steps and refusals name it all come from aggs.
type Agg string

const (
	NoAgg         Agg = ""
	Count         Agg = "count"
	CountDistinct Agg = "count_distinct"
	Sum           Agg = "sum"
	Avg           Agg = "avg"
	Max           Agg = "max"
	Min           Agg = "min"
)

type aggInfo struct {
	words   []string // the words of a question that ask for it
	noun    string   // how steps name it ("the total of amount")
	article string   // how refusals name it ("it asks for a total")
}

var aggs = map[Agg]aggInfo{
	Count:         {words: []string{"count"}, noun: "count", article: "a count"},
	CountDistinct: {noun: "number of distinct values", article: "a distinct count"},
	Sum:           {words: []string{"total", "sum"}, noun: "total", article: "a total"},
	Avg:           {words: []string{"average", "avg", "mean"}, noun: "average", article: "an average"},
	Max:           {words: []string{"max", "maximum"}, noun: "maximum", article: "a maximum"},
	Min:           {words: []string{"min", "minimum"}, noun: "minimum", article: "a minimum"},
}

// Aggs are the aggregates in the order they are described.
var Aggs = []Agg{Count, CountDistinct, Sum, Avg, Max, Min}

// Noun is how an explanation names the aggregate ("total").
func (a Agg) Noun() string { return aggs[a].noun }

// Article is the aggregate with its article ("an average").
func (a Agg) Article() string { return aggs[a].article }

// OfNumber reports whether the aggregate combines the values of a number column.
func (a Agg) OfNumber() bool { return a == Sum || a == Avg || a == Max || a == Min }

// Words are the words of a question that ask for the aggregate.
func (a Agg) Words() []string { return aggs[a].words }

// aggOf is the aggregate word w asks for, or NoAgg.
func aggOf(w string) Agg {
	for _, a := range Aggs {
		for _, x := range aggs[a].words {
			if x == w {
				return a
			}
		}
	}
	return NoAgg
}

// extremeOf is the aggregate of an ordering: the highest (desc) or the lowest (asc) value.
func extremeOf(order string) Agg {
	if order == "asc" {
		return Min
	}
	return Max
}

func init() {
	// every word that asks for an aggregate is read as intent, never as a name
	for _, a := range Aggs {
		for _, w := range a.Words() {
			intentWords[w] = true
		}
	}
}
