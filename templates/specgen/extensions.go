package specgen

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"dataplatform/store/ingest"
	"dataplatform/store/roles"

	"github.com/getkin/kin-openapi/openapi3"
)

// scopes are the OAuth 2.0 scopes a token may be granted.
var scopes = map[string]string{
	"openid": "OpenID Connect sign-in", "profile": "the user's profile", "email": "the user's email address",
	"offline_access": "a refresh token", "datasets:read": "read datasets and records", "datasets:write": "create and change datasets and records",
	"datasets:delete": "delete datasets and records", "queries:execute": "run queries", "organizations:manage": "manage organizations",
	"admin:users": "administer users", "admin:billing": "administer billing", "admin:system": "administer the system",
	"read": "read access", "write": "write access", "delete": "delete access", "admin": "administration",
}

var (
	emailValue = regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$`)
	phoneValue = regexp.MustCompile(`^\+?[0-9][0-9 ().-]{6,18}[0-9]$`)
	piiNames   = []struct {
		re       *regexp.Regexp
		category string
	}{
		{regexp.MustCompile(`(^|_)(ip|ip_address|ipv4|ipv6)($|_)`), "ip_address"},
		{regexp.MustCompile(`(^|_)(e_?mail|mail)($|_)`), "email"},
		{regexp.MustCompile(`(^|_)(phone|mobile|tel|telephone|cell|fax)($|_)`), "phone"},
		{regexp.MustCompile(`(^|_)(address|street|city|zip|zipcode|postal|postcode)($|_)`), "address"},
		{regexp.MustCompile(`(^|_)(first_?name|last_?name|full_?name|surname|given_?name|middle_?name)$`), "name"},
		{regexp.MustCompile(`(^|_)(birth|dob|birthday|birthdate|date_of_birth)($|_)`), "date_of_birth"},
		{regexp.MustCompile(`(^|_)(ssn|social_security|national_id|passport|tax_id)($|_)`), "national_id"},
		{regexp.MustCompile(`(^|_)(iban|card_number|credit_card|account_number)($|_)`), "financial"},
	}
)

// people are words of dataset names whose records are persons: their "name" is a person's.
var people = regexp.MustCompile(`(?i)(customer|user|person|people|employee|staff|contact|member|client|patient|student|subscriber|lead|applicant|author|owner|account)`)

// PII is what kind of personal data a column holds ("" for none), from its name (a bare
// "name" only in a dataset of persons), its declared format, and the sample values of its
// analysis.
func PII(dataset string, c ingest.Column, samples []string) string {
	name := strings.ToLower(c.Name)
	for _, p := range piiNames {
		if p.re.MatchString(name) {
			return p.category
		}
	}
	if (name == "name" || name == "display_name") && people.MatchString(dataset) {
		return "name"
	}
	if c.Constraints != nil && c.Constraints.Format == "email" {
		return "email"
	}
	if c.Type != ingest.Text || len(samples) == 0 {
		return ""
	}
	emails, phones := 0, 0
	for _, s := range samples {
		if emailValue.MatchString(s) {
			emails++
		}
		if phoneValue.MatchString(s) && strings.ContainsAny(s, "+ -()") {
			phones++
		}
	}
	switch {
	case emails*2 > len(samples):
		return "email"
	case phones*2 > len(samples):
		return "phone"
	}
	return ""
}

// constraints are a column's database constraints as x-constraints ({type, name}), named as
// the DDL names them (<column>_<kind>).
func constraints(c ingest.Column) []map[string]string {
	var out []map[string]string
	add := func(kind string) { out = append(out, map[string]string{"type": kind, "name": c.Name + "_" + kind}) }
	if !c.Nullable {
		out = append(out, map[string]string{"type": "not_null", "name": c.Name + "_not_null"})
	}
	if k := c.Constraints; k != nil {
		if k.Unique {
			add("unique")
		}
		if len(k.Enum) > 0 {
			add("enum")
		}
		if k.Pattern != "" || k.Format != "" {
			add("check")
		}
		if k.Minimum != nil || k.Maximum != nil {
			add("range")
		}
		if k.MinLength != nil || k.MaxLength != nil {
			add("length")
		}
		if c.DefaultValue() != nil {
			add("default")
		}
	}
	return out
}

// decorate adds the extensions that are not in the template: code samples per operation,
// the description-wide x- extensions, per-property x-constraints, x-display-name and x-pii,
// x-relationship on links, and the OAuth 2.0 security scheme.
func decorate(doc *openapi3.T, in Input) {
	names := NamesOf(in.Name)
	base := strings.TrimRight(in.ProductionURL, "/")
	addCodeSamples(doc, in, base)
	pii := piiColumns(in)
	decorateProperties(doc, in, names, pii)
	addRelationships(doc, in, names)
	addDescriptionExtensions(doc, in, base, pii)
	addOAuth(doc, in, base)
}

// addCodeSamples gives each operation x-code-samples in curl, JavaScript, Python and Go.
func addCodeSamples(doc *openapi3.T, in Input, base string) {
	example := exampleRecord(in.Table.Columns)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			url := base + strings.NewReplacer("{dataset_id}", in.DatasetID, "{id}", "1").Replace(path)
			if in.Table.Foreign {
				url += "?table=" + in.Table.Name
			}
			var body any
			switch {
			case strings.HasSuffix(path, "/query"):
				body = map[string]any{"sql": "SELECT * FROM ${table} LIMIT 10"}
			case strings.HasSuffix(path, "/bulk"):
				body = map[string]any{"operations": []any{map[string]any{"method": "create", "data": example}}}
			case method == "POST" || method == "PUT" || method == "PATCH":
				body = example
			}
			if op.Extensions == nil {
				op.Extensions = map[string]any{}
			}
			op.Extensions["x-code-samples"] = codeSamples(method, url, body)
		}
	}
}

// piiColumns is the kind of personal data of each column that holds some.
func piiColumns(in Input) map[string]string {
	pii := map[string]string{}
	for _, c := range in.Table.Columns {
		if kind := PII(in.Name, c, in.Samples[c.Name]); kind != "" {
			pii[c.Name] = kind
		}
	}
	return pii
}

// decorateProperties adds the record schemas' property extensions and their links' x-relationship.
func decorateProperties(doc *openapi3.T, in Input, names Names, pii map[string]string) {
	for _, kind := range []string{"", "Create", "Update", "Patch"} {
		ref := doc.Components.Schemas[names.Singular+kind]
		if ref == nil || ref.Value == nil {
			continue
		}
		for _, c := range in.Table.Columns {
			p := ref.Value.Properties[c.Name]
			if p == nil || p.Value == nil {
				continue
			}
			if p.Value.Extensions == nil {
				p.Value.Extensions = map[string]any{}
			}
			if cs := constraints(c); len(cs) > 0 {
				p.Value.Extensions["x-constraints"] = cs
			}
			if c.Original != "" && c.Original != c.Name {
				p.Value.Extensions["x-display-name"] = c.Original
			}
			if k, ok := pii[c.Name]; ok {
				p.Value.Extensions["x-pii"] = k
			}
		}
		if links := ref.Value.Properties["_links"]; links != nil && links.Value != nil {
			for _, l := range in.Links {
				if lp := links.Value.Properties[l.Name]; lp != nil && lp.Value != nil {
					rel := map[string]any{"type": "many-to-one", "target": l.Dataset, "foreign_key": l.LocalKey, "target_key": l.ForeignKey}
					if l.Many {
						rel = map[string]any{"type": "one-to-many", "target": l.Dataset, "foreign_key": l.ForeignKey, "local_key": l.LocalKey}
					}
					if l.Table != "" {
						rel["target_table"] = l.Table
					}
					lp.Value.Extensions = map[string]any{"x-relationship": rel}
				}
			}
		}
	}
}

// addRelationships lists every relationship of the record (many-to-many too) as x-relationships.
func addRelationships(doc *openapi3.T, in Input, names Names) {
	if rec := doc.Components.Schemas[names.Singular]; rec != nil && rec.Value != nil {
		var rels []map[string]any
		for _, l := range in.Links {
			rel := map[string]any{"type": "many-to-one", "name": l.Name, "target": l.Dataset, "foreign_key": l.LocalKey, "target_key": l.ForeignKey}
			if l.Many {
				rel = map[string]any{"type": "one-to-many", "name": l.Name, "target": l.Dataset, "foreign_key": l.ForeignKey, "local_key": l.LocalKey}
			}
			if l.Table != "" {
				rel["target_table"] = l.Table
			}
			rels = append(rels, rel)
		}
		for _, m := range in.ManyToMany {
			rels = append(rels, map[string]any{"type": "many-to-many", "name": ingest.Identifiers([]string{m.TargetName})[0], "target": m.Target,
				"junction_table": m.Junction, "junction_name": m.JunctionName, "local_key": m.LocalKey, "foreign_key": m.ForeignKey})
		}
		if len(rels) > 0 {
			if rec.Value.Extensions == nil {
				rec.Value.Extensions = map[string]any{}
			}
			rec.Value.Extensions["x-relationships"] = rels
		}
	}
}

// addDescriptionExtensions adds the description-wide x- extensions (info's and the document's).
func addDescriptionExtensions(doc *openapi3.T, in Input, base string, pii map[string]string) {
	if doc.Info.Extensions == nil {
		doc.Info.Extensions = map[string]any{}
	}
	doc.Info.Extensions["x-display-name"] = in.Name
	doc.Info.Extensions["x-logo"] = map[string]any{"url": logo, "altText": in.Name + " API", "backgroundColor": "#FFFFFF"}
	if doc.Extensions == nil {
		doc.Extensions = map[string]any{}
	}
	ds := base + "/api/v1/datasets/" + in.DatasetID
	doc.Extensions["x-tagGroups"] = []any{
		map[string]any{"name": "Data", "tags": []string{"Records", "Bulk"}},
		map[string]any{"name": "Analysis", "tags": []string{"Query", "Export"}},
		map[string]any{"name": "Real time", "tags": []string{"Stream"}},
	}
	doc.Extensions["x-documentation"] = map[string]any{"swagger_ui": ds + "/docs", "redoc": ds + "/redoc", "changelog": ds + "/changelog",
		"versions": ds + "/versions", "json_schema": ds + "/schema", "sdks": ds + "/sdk/{language}"}
	doc.Extensions["x-access-control"] = accessControl()
	doc.Extensions["x-security"] = map[string]any{
		"authentication": []string{"bearer JWT (RS256)", "API key (X-API-Key header or api_key query)", "OAuth 2.0 authorization code"},
		"permissions":    map[string]string{"read": "datasets:read", "write": "datasets:write", "delete": "datasets:delete"},
		"rate_limits":    rateLimits(),
	}
	doc.Extensions["x-validation"] = validationRules(in.Table.Columns)
	doc.Extensions["x-pii"] = piiList(pii)
	doc.Extensions["x-encryption"] = map[string]any{
		"in_transit":  "TLS where the service is published over HTTPS (DP_BASE_URL)",
		"at_rest":     "not per field: the rows are in PostgreSQL as stored; the storage volume's own encryption applies",
		"fields":      []string{},
		"credentials": "connected databases' passwords: AES-256-GCM (DP_SECRET_KEY)",
	}
	doc.Extensions["x-dataset-config"] = map[string]any{"soft_delete": in.Table.System(), "audit_trail": true, "row_level_security": true, "encryption_at_rest": false}
	if ms := ingest.Measures(in.Table.Columns); len(ms) > 0 {
		// the named measures, which the aggregate operation takes by name
		list := make([]map[string]any, len(ms))
		for i, m := range ms {
			list[i] = map[string]any{"name": m.Name, "expression": ingest.MeasureExpression(m)}
			if u := ingest.MeasureUnit(m, in.Table.Columns); u != "" {
				list[i]["unit"] = u
			}
		}
		doc.Extensions["x-measures"] = list
	}
	if in.Table.Foreign {
		doc.Extensions["x-dataset-config"].(map[string]any)["connected_table"] = map[string]any{"name": in.Table.Name, "remote": in.Table.Remote,
			"tables": in.Tables, "primary_key": in.Table.PrimaryKey, "writable": in.Table.Writable}
	}
	pkg := strings.ReplaceAll(ingest.Identifiers([]string{in.Name})[0], "_", "")
	doc.Extensions["x-generator-config"] = map[string]any{
		"go":         map[string]any{"package": pkg + "client", "generator": "oapi-codegen"},
		"typescript": map[string]any{"packageName": pkg + "-client", "runtime": "fetch"},
		"javascript": map[string]any{"packageName": pkg + "-client", "module": "esm"},
		"python":     map[string]any{"packageName": pkg + "_client", "dependencies": []string{}},
	}
}

// accessControl is x-access-control: the roles that may read, write and delete records.
func accessControl() map[string][]string {
	access := map[string][]string{}
	for _, r := range roles.All {
		perms := roles.Permissions(r)
		for action, perm := range map[string]string{"read": "datasets:read", "write": "datasets:write", "delete": "datasets:delete"} {
			if slices.Contains(perms, perm) {
				access[action] = append(access[action], r)
			}
		}
	}
	return access
}

// validationRules is x-validation: the columns' unique, enum, pattern and format rules.
func validationRules(cols []ingest.Column) []map[string]any {
	var rules []map[string]any
	for _, c := range cols {
		k := c.Constraints
		if k == nil {
			continue
		}
		if k.Unique {
			rules = append(rules, map[string]any{"type": "unique", "field": c.Name, "message": c.Name + " must be unique"})
		}
		if len(k.Enum) > 0 {
			rules = append(rules, map[string]any{"type": "domain", "field": c.Name, "allowed": k.Enum, "message": c.Name + " must be one of " + strings.Join(k.Enum, ", ")})
		}
		if k.Pattern != "" {
			rules = append(rules, map[string]any{"type": "custom", "field": c.Name, "function": "matches(" + k.Pattern + ")", "message": c.Name + " must match " + k.Pattern})
		}
		if k.Format != "" {
			rules = append(rules, map[string]any{"type": "custom", "field": c.Name, "function": "format(" + k.Format + ")", "message": c.Name + " must be a valid " + k.Format})
		}
	}
	if rules == nil {
		rules = []map[string]any{}
	}
	return rules
}

// piiList is x-pii: the columns holding personal data and its kind, by column name.
func piiList(pii map[string]string) []map[string]string {
	var piiList []map[string]string
	keys := make([]string, 0, len(pii))
	for k := range pii {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		piiList = append(piiList, map[string]string{"field": k, "category": pii[k]})
	}
	if piiList == nil {
		piiList = []map[string]string{}
	}
	return piiList
}

// addOAuth adds the OAuth 2.0 scheme (authorization code, the platform's scopes) as a security option.
func addOAuth(doc *openapi3.T, in Input, base string) {
	authURL := strings.TrimRight(in.AuthURL, "/")
	if authURL == "" {
		authURL = base + "/api/v1/auth/oauth"
	}
	doc.Components.SecuritySchemes["oauth2"] = &openapi3.SecuritySchemeRef{Value: &openapi3.SecurityScheme{
		Type: "oauth2", Description: "OAuth 2.0 / OpenID Connect through the identity provider.",
		Flows: &openapi3.OAuthFlows{AuthorizationCode: &openapi3.OAuthFlow{
			AuthorizationURL: authURL + "/authorize", TokenURL: authURL + "/token", Scopes: scopes}},
	}}
	doc.Security = append(doc.Security, openapi3.SecurityRequirement{"oauth2": {"datasets:read"}})
}

// logo is a small mark for documentation pages (a data URI: the pages load nothing from
// other hosts).
const logo = "data:image/svg+xml;base64,PHN2ZyB4bWxucz0naHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmcnIHZpZXdCb3g9JzAgMCAzMiAzMic+PHJlY3Qgd2lkdGg9JzMyJyBoZWlnaHQ9JzMyJyByeD0nNicgZmlsbD0nIzI1NjNlYicvPjxwYXRoIGQ9J004IDIyVjEwaDZhNiA2IDAgMCAxIDAgMTJ6JyBmaWxsPSd3aGl0ZScvPjwvc3ZnPg=="

// exampleRecord is a plausible record body of the columns (for code samples).
func exampleRecord(cols []ingest.Column) map[string]any {
	out := map[string]any{}
	for _, c := range cols {
		if c.Nullable && len(out) >= 3 {
			continue
		}
		switch {
		case c.Constraints != nil && len(c.Constraints.Enum) > 0:
			out[c.Name] = c.Constraints.Enum[0]
		case c.Constraints != nil && c.Constraints.Format == "email":
			out[c.Name] = "jane@example.com"
		case c.Type == ingest.Integer || c.Type == ingest.BigInt:
			out[c.Name] = 1
		case c.Type == ingest.Numeric:
			out[c.Name] = 9.5
		case c.Type == ingest.Boolean:
			out[c.Name] = true
		case c.Type == ingest.Date:
			out[c.Name] = "2024-01-31"
		case c.Type == ingest.Timestamptz:
			out[c.Name] = "2024-01-31T12:00:00Z"
		case c.Type == ingest.UUID:
			out[c.Name] = "6f1c2a9e-8e4b-4c1a-9d5e-1f2a3b4c5d6e"
		case c.Type == ingest.JSONB:
			out[c.Name] = map[string]any{}
		case c.Type.IsArray():
			out[c.Name] = []any{}
		default:
			out[c.Name] = "text"
		}
	}
	return out
}

// codeSamples are x-code-samples (Redoc's form: lang, label, source) of one call.
func codeSamples(method, url string, body any) []map[string]string {
	var js []byte
	if body != nil {
		js, _ = json.MarshalIndent(body, "", "  ")
	}
	curl := fmt.Sprintf("curl -X %s '%s' \\\n  -H 'Authorization: Bearer $TOKEN'", method, url)
	if body != nil {
		curl += fmt.Sprintf(" \\\n  -H 'Content-Type: application/json' \\\n  -d '%s'", strings.ReplaceAll(string(js), "'", `'\''`))
	}
	jsSrc := fmt.Sprintf("const res = await fetch(%q, {\n  method: %q,\n  headers: { Authorization: `Bearer ${token}`", url, method)
	if body != nil {
		jsSrc += ", \"Content-Type\": \"application/json\" },\n  body: JSON.stringify(" + string(js) + "),\n});"
	} else {
		jsSrc += " },\n});"
	}
	jsSrc += "\nconsole.log(await res.json());"
	py := "import json, os, urllib.request\n\n"
	if body != nil {
		py += fmt.Sprintf("req = urllib.request.Request(%q, method=%q, data=json.dumps(%s).encode(),\n    headers={\"Authorization\": \"Bearer \" + os.environ[\"TOKEN\"], \"Content-Type\": \"application/json\"})\n",
			url, method, pyLiteral(string(js)))
	} else {
		py += fmt.Sprintf("req = urllib.request.Request(%q, method=%q,\n    headers={\"Authorization\": \"Bearer \" + os.environ[\"TOKEN\"]})\n", url, method)
	}
	py += "with urllib.request.urlopen(req) as res:\n    print(json.load(res))"
	goSrc := "req, _ := http.NewRequest(" + fmt.Sprintf("%q, %q", method, url)
	if body != nil {
		goSrc += ", strings.NewReader(`" + string(js) + "`))\nreq.Header.Set(\"Content-Type\", \"application/json\")"
	} else {
		goSrc += ", nil)"
	}
	goSrc += "\nreq.Header.Set(\"Authorization\", \"Bearer \"+os.Getenv(\"TOKEN\"))\nres, err := http.DefaultClient.Do(req)"
	return []map[string]string{
		{"lang": "Shell", "label": "curl", "source": curl},
		{"lang": "JavaScript", "label": "JavaScript", "source": jsSrc},
		{"lang": "Python", "label": "Python", "source": py},
		{"lang": "Go", "label": "Go", "source": goSrc},
	}
}

// pyLiteral is JSON as a Python literal (true/false/null differ).
func pyLiteral(js string) string {
	return strings.NewReplacer(": true", ": True", ": false", ": False", ": null", ": None").Replace(js)
}

// RecordRateLimits are the record API's default rate limits as its descriptions state them,
// by the category's last word (records_read: read); the server's limiter must agree (its
// test checks).
var RecordRateLimits = map[string]string{"read": "1000/min", "write": "100/min", "delete": "50/min", "query": "100/min", "export": "10/min", "bulk": "20/min"}

// rateLimits is the x-security rate_limits object: the figures and what they count.
func rateLimits() map[string]string {
	out := map[string]string{"counted_against": "each caller (user, or API key) per dataset, one counter per category: reads are GET of records (lists, " +
		"single records, streams and sockets when they connect), writes POST/PUT/PATCH, query is /data/query and /data/aggregate. " +
		"This dataset's traffic draws neither on another dataset's counters nor on the platform API's. The figures are the " +
		"defaults (an operator may change them); the X-RateLimit-Limit, -Remaining, -Reset and -Reset-After headers of every " +
		"answer give the figures in force, and a 429 names its category in details.category."}
	for k, v := range RecordRateLimits {
		out[k] = v
	}
	return out
}
