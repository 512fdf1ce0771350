package datasets

import (
	"dataplatform/store/ingest"
)

// How a value reads: one format on every path. A record's JSON (list, single read, writes'
// answers, the preview, json and ndjson exports) is PostgreSQL's to_json of each field as
// JSONValue selects it: numbers as JSON numbers exactly as stored (4412.80 keeps its zero),
// booleans, JSON documents as themselves, arrays as JSON arrays, dates as "YYYY-MM-DD" and
// timestamps as RFC 3339 in UTC ("2024-05-06T17:30:00Z", a fraction kept when there is one)
// whatever the session's time zone. A csv cell is the text of that JSON value (TextValue):
// strings without their quotes, the rest as JSON writes it (true, 4412.80, ["a","b"]).

// JSONValue is the SQL expression whose to_json is the value of column c (ref, a quoted
// column reference) as the record API writes it.
func JSONValue(c ingest.Column, ref string) string {
	switch c.Type {
	case ingest.Timestamptz:
		return utcText(ref)
	case ingest.ArrayOf(ingest.Timestamptz): // connected tables only; one dimension (more: to_json's)
		return `CASE WHEN array_ndims(` + ref + `) = 1 THEN (SELECT to_json(array_agg(` + utcText("dp_u.v") +
			` ORDER BY dp_u.i)) FROM unnest(` + ref + `) WITH ORDINALITY dp_u(v, i)) ELSE to_json(` + ref + `) END`
	}
	return ref
}

// TextValue is the SQL text of column c's value (ref) as a csv cell holds it: the text of
// its JSON value (JSONValue), NULL as NULL.
func TextValue(c ingest.Column, ref string) string {
	switch {
	case c.Type == ingest.Boolean:
		return `CASE WHEN ` + ref + ` THEN 'true' WHEN NOT ` + ref + ` THEN 'false' END`
	case c.Type == ingest.Timestamptz:
		return utcText(ref)
	case c.Type.IsArray():
		return `to_json(` + JSONValue(c, ref) + `)::text`
	}
	return ref + `::text`
}

// utcText is a timestamptz as RFC 3339 text in UTC. The timestamp's own text output (the
// driver keeps DateStyle ISO) with a T and a Z is the cheapest way there (to_char or to_json
// cost about twice as much on a large export); infinities and years before 1 read as to_json
// writes them.
func utcText(ref string) string {
	return `CASE WHEN isfinite(` + ref + `) AND ` + ref + ` >= '0001-01-01T00:00:00Z' THEN replace((` + ref +
		` AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z' ELSE to_json(` + ref + ` AT TIME ZONE 'UTC') #>> '{}' END`
}
