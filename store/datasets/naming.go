package datasets

import (
	"strings"

	"dataplatform/store/ingest"
)

// What a column's name says about keys and references: whether it identifies something, and
// which dataset it names. Both keys (judged on one file) and relationships (judged across the
// project) read names through these, so one vocabulary decides what looks like an identifier.

// idSuffixes end names that identify things: customer_id, station_code, order_no,
// rental_ref, bike_serial, member_number, asset_uuid.
var idSuffixes = []string{"id", "code", "no", "num", "nbr", "number", "ref", "serial", "key", "uuid", "guid"}

// idNames identify a record by themselves, wherever they are.
var idNames = map[string]bool{"id": true, "sku": true, "isbn": true, "code": true, "ref": true, "number": true, "key": true,
	"uuid": true, "guid": true, "serial": true, "slug": true, "ean": true, "upc": true}

// idStem is what an identifier-shaped column name identifies (customer_id, customerid,
// customer_code → customer; start_station_id → start_station) and whether the name is
// shaped as an identifier at all. A name that identifies by itself (sku, isbn, code) has no
// stem. The file's id column, kept beside a generated id as src_id, is "id".
func idStem(name string) (string, bool) {
	if name == "src_id" || idNames[name] {
		return "", true
	}
	for _, s := range idSuffixes {
		if st, ok := strings.CutSuffix(name, "_"+s); ok && st != "" {
			return st, true
		}
	}
	// Run together only with id (customerid, stuid): "postcode", "casino" are words.
	if st, ok := strings.CutSuffix(name, "id"); ok && len(st) >= 2 {
		return st, true
	}
	return "", false
}

// entityForms are the words a dataset's name may be referred to by: the name as an
// identifier, its singular, its last word and that word's singular (bike_rentals: bike_rentals,
// bike_rental, rentals, rental).
func entityForms(datasetName string) []string {
	n := ingest.Identifiers([]string{datasetName})[0]
	forms := []string{n, ingest.Singular(n)}
	if i := strings.LastIndexByte(n, '_'); i >= 0 {
		last := n[i+1:]
		forms = append(forms, last, ingest.Singular(last))
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
var qualifiers = map[string]bool{"type": true, "types": true, "info": true, "details": true, "detail": true, "data": true, "list": true,
	"ref": true, "record": true, "records": true, "table": true, "log": true, "logs": true, "master": true, "lookup": true, "map": true, "has": true}

// names is how surely word (an identifier) refers to the dataset called datasetName.
func names(datasetName, word string) int {
	if word == "" {
		return namesNot
	}
	w := strings.ReplaceAll(word, "_", "")
	forms := entityForms(datasetName)
	for _, f := range forms[:2] {
		if strings.ReplaceAll(f, "_", "") == w {
			return namesExact
		}
	}
	for _, part := range strings.Split(forms[0], "_") {
		if !qualifiers[part] && (part == word || ingest.Singular(part) == word) {
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
