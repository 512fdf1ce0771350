package ingest

import (
	"strconv"
	"strings"
	"unicode"
)

// reserved are the system columns every dataset table has.
var reserved = map[string]bool{"id": true, "created_at": true, "updated_at": true, "deleted_at": true, "version": true}

// Identifiers turns display names into safe, distinct PostgreSQL identifiers: lowercase ASCII
// letters, digits and underscores, not starting with a digit, at most 63 bytes. A name that
// is one of the system columns gets a src_ prefix; duplicates get _2, _3, ...
func Identifiers(names []string) []string {
	out := make([]string, len(names))
	seen := map[string]bool{}
	for i, n := range names {
		var b strings.Builder
		under := false
		for _, r := range strings.ToLower(n) {
			if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
				b.WriteRune(r)
				under = false
			} else if !under {
				b.WriteByte('_')
				under = true
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
		if len(id) > 60 {
			id = strings.TrimRight(id[:60], "_")
		}
		base := id
		for k := 2; seen[id]; k++ {
			id = base + "_" + strconv.Itoa(k)
		}
		seen[id] = true
		out[i] = id
	}
	return out
}
