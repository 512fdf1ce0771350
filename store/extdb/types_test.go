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
