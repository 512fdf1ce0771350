package ingest

import (
	"strconv"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// reserved are the system columns every dataset table has.
var reserved = map[string]bool{"id": true, "created_at": true, "updated_at": true, "deleted_at": true, "version": true}

// maxIdent is PostgreSQL's identifier limit (NAMEDATALEN-1): longer names are truncated by
// the server, which could make two columns collide.
const maxIdent = 63

// Identifiers turns display names into safe, distinct PostgreSQL identifiers that need no
// quoting rules beyond the usual: lowercase ASCII letters, digits and underscores (accents
// are dropped, é → e; other runs of characters become one _), trimmed of _, not starting
// with a digit (c_ prefix), at most 63 bytes, column_N (N the 1-based position) when nothing
// is left. A system column name (id, created_at, updated_at, deleted_at, version) gets a
// src_ prefix; duplicates get _2, _3, ... within the limit.
func Identifiers(names []string) []string {
	out := make([]string, len(names))
	seen := map[string]bool{}
	next := map[string]int{} // the next suffix to try for a base: linear in the names, however many repeat
	for i, n := range names {
		var b strings.Builder
		under := false
		for _, r := range norm.NFD.String(n) {
			switch {
			case r >= 'A' && r <= 'Z':
				r += 'a' - 'A'
				fallthrough
			case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
				b.WriteRune(r)
				under = false
			case r >= 0x300 && r <= 0x36f: // combining marks left by NFD: drop the accent only
			default:
				if !under {
					b.WriteByte('_')
					under = true
				}
			}
		}
		id := strings.Trim(b.String(), "_")
		switch {
		case id == "":
			id = "column_" + strconv.Itoa(i+1)
		case id[0] >= '0' && id[0] <= '9':
			id = "c_" + id
		}
		if reserved[id] {
			id = "src_" + id
		}
		base := truncate(id, maxIdent)
		id = base
		k := max(next[base], 2)
		for ; seen[id]; k++ {
			suffix := "_" + strconv.Itoa(k)
			id = truncate(base, maxIdent-len(suffix)) + suffix
		}
		next[base] = k
		seen[id] = true
		out[i] = id
	}
	return out
}

// truncate cuts an ASCII identifier to n bytes without leaving a trailing _.
func truncate(id string, n int) string {
	if len(id) <= n {
		return id
	}
	return strings.TrimRight(id[:n], "_")
}

// irregular are English plurals that suffix rules get wrong, by their singular.
var irregular = map[string]string{"people": "person", "children": "child", "men": "man", "women": "woman", "mice": "mouse",
	"geese": "goose", "feet": "foot", "teeth": "tooth", "data": "datum", "criteria": "criterion", "media": "medium",
	"analyses": "analysis", "indices": "index", "matrices": "matrix", "vertices": "vertex", "staff": "staff", "series": "series",
	"species": "species", "news": "news", "leaves": "leaf", "lives": "life", "wives": "wife", "knives": "knife", "shelves": "shelf"}

// Singular is the singular of an English noun in lower case (patients → patient, people →
// person, categories → category, addresses → address); words it does not know as plurals
// are returned as they are.
func Singular(w string) string {
	if s, ok := irregular[w]; ok {
		return s
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "shes"), strings.HasSuffix(w, "zes"):
		return w[:len(w)-2]
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
		return w
	case strings.HasSuffix(w, "s") && len(w) > 3:
		return w[:len(w)-1]
	}
	return w
}

// The classes of words.txt that make names identifiers: endings (customer_id, station_code,
// order_no), whole names (sku, isbn) and words ending in id that are no identifiers (paid).
var (
	idSuffixes = wordsOf("id-suffix").list
	idNames    = Words("id-name")
	notGluedID = Words("not-glued-id")
)

// IDStem is what an identifier-shaped column name identifies (customer_id, customerid,
// customer_code → customer; start_station_id → start_station) and whether the name is
// shaped as an identifier at all. A name that identifies by itself (sku, isbn, code) has no
// stem; nor has the file's id column kept beside a generated id (src_id). Keys, references
// and column roles read identifiers through it, so one vocabulary says what looks like one.
func IDStem(name string) (string, bool) {
	if name == "src_id" || idNames[name] {
		return "", true
	}
	for _, s := range idSuffixes {
		if st, ok := strings.CutSuffix(name, "_"+s); ok && st != "" {
			return st, true
		}
	}
	// Run together only with id and number (customerid, stuid, roomnumber): "postcode",
	// "casino" are words.
	if st, ok := strings.CutSuffix(name, "id"); ok && len(st) >= 3 && !notGluedID[name] {
		return st, true
	}
	if st, ok := strings.CutSuffix(name, "number"); ok && len(st) >= 2 {
		return st, true
	}
	return "", false
}
