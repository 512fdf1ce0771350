package extdb

import (
	"testing"

	"dataplatform/store/ingest"
)

func TestApplyChecks(t *testing.T) {
	tbl := Table{Columns: []Column{
		{Column: ingest.Column{Original: "age"}}, {Column: ingest.Column{Original: "price"}},
		{Column: ingest.Column{Original: "name"}}, {Column: ingest.Column{Original: "code"}}, {Column: ingest.Column{Original: "email"}},
	}, Checks: []string{
		"CHECK ((age >= 0))", "CHECK ((age <= 150))", "CHECK ((price < 100.5))", "CHECK ((char_length(name) >= 1))",
		"CHECK ((length((code)::text) <= 5))", "CHECK ((email ~ '^[^@]+@x''y$'::text))", "`code` regexp '^[A-Z]+$'",
		"CHECK ((age > price))", // two columns: not a bound
	}}
	applyChecks(&tbl)
	age, price, name, code, email := tbl.Columns[0].Constraints, tbl.Columns[1].Constraints, tbl.Columns[2].Constraints, tbl.Columns[3].Constraints, tbl.Columns[4].Constraints
	if age == nil || *age.Minimum != 0 || *age.Maximum != 150 || *price.Maximum != 100.5 || *name.MinLength != 1 ||
		*code.MaxLength != 5 || code.Pattern != "^[A-Z]+$" || email.Pattern != "^[^@]+@x'y$" {
		t.Fatalf("checks: %+v %+v %+v %+v %+v", age, price, name, code, email)
	}
}

func TestLiteralDefault(t *testing.T) {
	for in, want := range map[string]string{
		"'pending'::customer_status": `"pending"`, "0": "0", "'it''s'::text": `"it's"`, "true": "true", "12.5": "12.5",
		"nextval('customers_id_seq'::regclass)": "", "now()": "", "CURRENT_TIMESTAMP": "", "current_timestamp()": "", "NULL::text": "",
		"pending": `"pending"`, // MySQL 8 shows strings bare
	} {
		got, ok := literalDefault(in)
		if (want == "") == ok || string(got) != want {
			t.Errorf("%s: %s %v, want %s", in, got, ok, want)
		}
	}
}

func TestPgDefault(t *testing.T) {
	for _, tc := range []struct {
		def  string
		typ  ingest.Type
		want string // "" none
		expr bool
	}{
		{`'{}'::jsonb`, ingest.JSONB, `{}`, false},
		{`'{"a": 1}'::jsonb`, ingest.JSONB, `{"a":1}`, false},
		{`'[]'::jsonb`, ingest.JSONB, `[]`, false},
		{`'{"b": [1, "x''s"]}'::json`, ingest.JSONB, `{"b":[1,"x's"]}`, false},
		{`'not json'::jsonb`, ingest.JSONB, "", false},
		{`'{}'::text[]`, ingest.ArrayOf(ingest.Text), `[]`, false},
		{`'{1,-2,NULL}'::integer[]`, ingest.ArrayOf(ingest.Integer), `[1,-2,null]`, false},
		{`'{"a b",c,"d\"e","NULL"}'::text[]`, ingest.ArrayOf(ingest.Text), `["a b","c","d\"e","NULL"]`, false},
		{`'{{1,2},{3,4}}'::integer[]`, ingest.ArrayOf(ingest.Integer), "", false},
		{`ARRAY['a'::text, 'b'::text]`, ingest.ArrayOf(ingest.Text), "", true},
		{`ARRAY[]::text[]`, ingest.ArrayOf(ingest.Text), "", true},
		{`'infinity'::timestamp with time zone`, ingest.Timestamptz, "", false},
		{`(1 + 1)`, ingest.Integer, "", true},
		{`CURRENT_DATE`, ingest.Date, "", true},
		{`'1 day'::interval`, ingest.Text, `"1 day"`, false},
		{`'a''b'::character varying`, ingest.Text, `"a'b"`, false},
		{`now()`, ingest.Timestamptz, "", true},
		{`CURRENT_TIMESTAMP`, ingest.Timestamptz, "", true},
		{`gen_random_uuid()`, ingest.UUID, "", true},
		{`nextval('things_seq'::regclass)`, ingest.Integer, "", true},
		{`'x'::text || 'y'::text`, ingest.Text, "", true},
		{`'x'::text`, ingest.Text, `"x"`, false},
		{`'happy'::mood`, ingest.Text, `"happy"`, false},
		{`'-1'::integer`, ingest.Integer, `-1`, false},
		{`(-1)`, ingest.Integer, `-1`, false},
		{`'-2.50'::numeric`, ingest.Numeric, `-2.50`, false},
		{`'NaN'::numeric`, ingest.Numeric, "", false},
		{`'2024-01-02'::date`, ingest.Date, `"2024-01-02"`, false},
		{`'2024-01-02 04:04:05+01'::timestamp with time zone`, ingest.Timestamptz, `"2024-01-02T03:04:05Z"`, false},
		{`'2024-01-02 03:04:05.5'::timestamp without time zone`, ingest.Timestamptz, `"2024-01-02T03:04:05.5Z"`, false},
		{`false`, ingest.Boolean, `false`, false},
		{`0`, ingest.Integer, `0`, false},
	} {
		got, expr := pgDefault(tc.def, tc.typ)
		if string(got) != tc.want || expr != tc.expr {
			t.Errorf("%s (%s): %s %v, want %s %v", tc.def, tc.typ, got, expr, tc.want, tc.expr)
		}
	}
}
