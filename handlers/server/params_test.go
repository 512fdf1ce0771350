package server

import (
	"errors"
	"testing"

	"dataplatform/handlers/apierr"
)

// TestMalformedQuery: every pair url.ParseQuery would drop is refused, named by its parameter;
// what it reads whole passes.
func TestMalformedQuery(t *testing.T) {
	for raw, want := range map[string][]string{
		"":                                   nil,
		"filter[city][eq]=Bos%3Bton&limit=2": nil,
		"a=%25&b=+x":                         nil,
		"filter[city][eq]=Bos;ton":           {"query.filter[city][eq]"},
		"limit=2&sort=a;page=3":              {"query.sort"},
		"filter%5Bcity%5D%5Beq%5D=Bos;ton":   {"query.filter[city][eq]"},
		"q=50%&x=%zz&ok=1":                   {"query.q", "query.x"},
		"%zz=1":                              {"query.%zz"},
	} {
		err := malformedQuery(raw)
		var ae *apierr.Error
		if want == nil {
			if err != nil {
				t.Errorf("%q: %v", raw, err)
			}
			continue
		}
		if !errors.As(err, &ae) || ae.Code != apierr.CodeValidationError {
			t.Errorf("%q: %v", raw, err)
			continue
		}
		fields := ae.Details.([]apierr.FieldError)
		if len(fields) != len(want) {
			t.Errorf("%q: %v", raw, fields)
			continue
		}
		for i, f := range fields {
			if f.Field != want[i] || f.Code != "malformed" {
				t.Errorf("%q: %v, want %v", raw, fields, want)
			}
		}
	}
}
