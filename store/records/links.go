package records

import (
	"net/url"
	"strings"

	"dataplatform/store/ingest"

	"github.com/lib/pq"
)

// Link is a relationship of a record as the record API shows it: its name in _links and
// expand/include, the dataset (and table, for a connected database) it points at, the local
// column holding the value and the target column it matches ("" → the other dataset's record
// by id). Many links list records; the others point at one, by its key when Target is the
// other record's key (ToKey), else through a filter on Target.
type Link struct {
	Name, Dataset, Column, Target string
	Table                         string // the other table of a connected database
	Many, ToKey                   bool
}

// URL is the address of what the link points at for a record whose column holds val: the
// one record (by its key) or the collection filtered on target.
func (l Link) URL(val string) string {
	base := "/api/v1/datasets/" + l.Dataset + "/data"
	if !l.Many && l.ToKey {
		u := base + "/" + url.PathEscape(val)
		if l.Table != "" {
			u += "?table=" + url.QueryEscape(l.Table)
		}
		return u
	}
	q := ""
	if l.Table != "" {
		q = "table=" + url.QueryEscape(l.Table) + "&"
	}
	return base + "?" + q + url.Values{"filter[" + l.Target + "]": {val}}.Encode()
}

// LinksSQL is the SQL expression of a record's _links, as the record handler makes them, when every
// link is built from an integer (nothing to escape in a URL); "" otherwise.
func LinksSQL(datasetID string, t *Table, links []Link) string {
	if k := t.Column(t.Key()); t.Key() == "" || (k.Type != ingest.Integer && k.Type != ingest.BigInt) || len(links) > 40 {
		return ""
	}
	self := pq.QuoteLiteral("/api/v1/datasets/"+datasetID+"/data/") + ` || ` + pq.QuoteIdentifier(t.Key())
	if t.Foreign {
		self += ` || ` + pq.QuoteLiteral("?table="+url.QueryEscape(t.Name))
	}
	parts := []string{`'self'`, self}
	for _, l := range links {
		if c := t.Column(l.Column); c.Type != ingest.Integer && c.Type != ingest.BigInt {
			return ""
		}
		// The URL withLinks makes, around the column's value (an integer: nothing to escape).
		pre, post, _ := strings.Cut(l.URL("\x00"), "%00")
		href := pq.QuoteLiteral(pre) + ` || ` + pq.QuoteIdentifier(l.Column)
		if post != "" {
			href += ` || ` + pq.QuoteLiteral(post)
		}
		parts = append(parts, pq.QuoteLiteral(l.Name), href)
	}
	return `json_strip_nulls(json_build_object(` + strings.Join(parts, ", ") + `))`
}
