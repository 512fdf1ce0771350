package datasets

import (
	"strings"
	"sync"
	"sync/atomic"

	"dataplatform/store/ingest"
)

// What a column's name says about keys and references: whether it identifies something, and
// which dataset it names. Both keys (judged on one file) and relationships (judged across the
// project) read names through these, so one vocabulary decides what looks like an identifier.

// idStem is what an identifier-shaped column name identifies (ingest.IDStem).
func idStem(name string) (string, bool) { return ingest.IDStem(name) }

// entityForms are the forms of a dataset's name a word may refer to it by: the name as an
// identifier, its singular, and without a plural's "es" (campuses: campuses, campuse,
// campus; the suffix rules cannot tell campuses from houses).
func entityForms(datasetName string) []string {
	if f, ok := formCache.Load(datasetName); ok {
		return f.([]string)
	}
	f := makeForms(datasetName)
	if cachedForms.Add(1) <= maxCachedForms {
		formCache.Store(datasetName, f)
	}
	return f
}

// Inference asks for the forms of every dataset of a project on every arrival: they are kept
// by name (up to maxCachedForms names; the slices are shared, callers do not change them).
var (
	formCache   sync.Map
	cachedForms atomic.Int64
)

const maxCachedForms = 100_000

func makeForms(datasetName string) []string {
	n := ingest.Identifiers([]string{datasetName})[0]
	forms := []string{n, ingest.Singular(n)}
	if st, ok := strings.CutSuffix(n, "es"); ok {
		forms = append(forms, st)
	}
	return forms
}

// Naming strengths: how surely a word refers to a dataset.
const (
	namesNot    = iota
	namesAbbrev // a prefix of three letters or more (stu → student, emp → employees)
	namesWord   // one of its words (allergy → allergy_type)
	namesExact  // its name or its singular (customer → customers)
)

// qualifiers are the words of dataset names that say what kind of table it is, not what it
// holds (allergy_type, customer_details, order_log): a column is not named after them.
var qualifiers = ingest.Words("dataset-qualifier")

// names is how surely word (an identifier) refers to the dataset called datasetName.
func names(datasetName, word string) int {
	if word == "" {
		return namesNot
	}
	w := strings.ReplaceAll(word, "_", "")
	forms := entityForms(datasetName)
	for _, f := range forms {
		if strings.ReplaceAll(f, "_", "") == w {
			return namesExact
		}
	}
	for _, part := range strings.Split(forms[0], "_") {
		if !qualifiers[part] && (part == word || ingest.Singular(part) == word || strings.TrimSuffix(part, "es") == word) {
			return namesWord
		}
	}
	if s := strings.ReplaceAll(forms[1], "_", ""); len(w) >= 3 && len(w) < len(s) && strings.HasPrefix(s, w) {
		return namesAbbrev
	}
	return namesNot
}

// referredName is how surely a column's name refers to the dataset: by its stem
// (customer_id → customers) or, for a reference named by role, by the last word of the
// name or stem (start_station, end_station_code → stations).
func referredName(datasetName, column string) int {
	stem, idLike := idStem(column)
	if !idLike {
		stem = column
	}
	best := names(datasetName, stem)
	if i := strings.LastIndexByte(stem, '_'); i >= 0 && best < namesWord {
		if n := names(datasetName, stem[i+1:]); n >= namesWord {
			best = namesWord
		}
	}
	return best
}

// initialed reports whether a column's name is the dataset's first letters run together
// with id, no, num or number (aircraft: aid; employees: eid; flights: flno; departments:
// dnumber): too short to name anything by itself, it names the dataset it is in.
func initialed(datasetName, column string) bool {
	n := strings.ReplaceAll(entityForms(datasetName)[1], "_", "")
	for _, s := range []string{"id", "no", "num", "number"} {
		if st, ok := strings.CutSuffix(column, s); ok && st != "" && len(st) <= 2 && strings.HasPrefix(n, st) {
			return true
		}
	}
	return false
}
