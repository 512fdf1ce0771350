package queries

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Param is a declared parameter of a saved query.
type Param struct {
	Name        string `json:"name"`
	Type        string `json:"type"` // string, integer, number, boolean or date
	Default     any    `json:"default,omitempty"`
	Description string `json:"description,omitempty"`
}

// ParamError is a parameter value (or declaration) that does not fit.
type ParamError struct {
	Name, Code, Message string
}

// Check reports why v is not a value of type typ, or "".
func Check(typ string, v any) string {
	switch x := v.(type) {
	case nil:
		return "" // NULL fits every type
	case string:
		switch typ {
		case "string":
			return ""
		case "date":
			if _, err := time.Parse(time.DateOnly, x); err == nil {
				return ""
			}
			return "a date as YYYY-MM-DD"
		}
	case float64:
		switch typ {
		case "number":
			return ""
		case "integer":
			if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
				return ""
			}
			return "a whole number"
		}
	case bool:
		if typ == "boolean" {
			return ""
		}
	}
	return "a value of type " + typ
}

// Declare checks declarations against the placeholders a query uses: every placeholder
// declared, every declaration used, names unique, defaults of their types.
func Declare(params []Param, used []string) []ParamError {
	var errs []ParamError
	seen := map[string]bool{}
	for _, p := range params {
		switch {
		case seen[p.Name]:
			errs = append(errs, ParamError{p.Name, "duplicate", "the parameter " + p.Name + " is declared twice"})
		case !slices.Contains(used, p.Name):
			errs = append(errs, ParamError{p.Name, "unknown_field", "the query has no {{" + p.Name + "}} placeholder"})
		case p.Default != nil && Check(p.Type, p.Default) != "":
			errs = append(errs, ParamError{p.Name, "type", "the default of " + p.Name + " must be " + Check(p.Type, p.Default)})
		}
		seen[p.Name] = true
	}
	for _, u := range used {
		if !seen[u] {
			errs = append(errs, ParamError{u, "required", "the query uses {{" + u + "}}: declare it in parameters"})
		}
	}
	return errs
}

// Values are the values of a saved query's parameters: given ones checked against their
// types, defaults for the rest; an undeclared name or a missing value without a default is
// an error.
func Values(params []Param, given map[string]*any) (map[string]*any, []ParamError) {
	out := map[string]*any{}
	var errs []ParamError
	declared := map[string]Param{}
	for _, p := range params {
		declared[p.Name] = p
	}
	for name, v := range given {
		p, ok := declared[name]
		if !ok {
			errs = append(errs, ParamError{name, "unknown_field", "the saved query has no parameter " + name})
			continue
		}
		var val any
		if v != nil {
			val = *v
		}
		if why := Check(p.Type, val); why != "" {
			errs = append(errs, ParamError{name, "type", fmt.Sprintf("%s must be %s", name, why)})
			continue
		}
		out[name] = v
	}
	for _, p := range params {
		if _, ok := given[p.Name]; ok {
			continue
		}
		if p.Default == nil {
			errs = append(errs, ParamError{p.Name, "required", p.Name + " has no default: give a value"})
			continue
		}
		d := p.Default
		out[p.Name] = &d
	}
	slices.SortFunc(errs, func(a, b ParamError) int { return strings.Compare(a.Name, b.Name) })
	return out, errs
}
