package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Text is the PostgreSQL input form of v for the column's type, as COPY (and any text
// parameter) takes it: booleans as true/false, dates as YYYY-MM-DD, timestamps in ISO 8601
// with an offset (a timestamp without one is UTC, so the session time zone does not
// matter), jsonb as JSON text, arrays as literals {"a","b \"c\""}. null is true for NULL. A
// value the type cannot hold gives a *RowError naming the column and the value, without the
// line, which the caller knows (Reader.Line; AppendCopyLine sets it).
func (c Column) Text(v Value) (s string, null bool, err error) {
	var reason string
	switch x := v.(type) {
	case nil:
		return "", true, nil
	case string:
		s, reason = convertString(c.Type, x)
	default:
		s, reason = convert(c.Type, v)
	}
	if reason != "" {
		return "", false, &RowError{Column: c.display(), Value: shorten(v), Reason: reason}
	}
	return s, false, nil
}

func (c Column) display() string {
	if c.Original != "" {
		return c.Original
	}
	return c.Name
}

// Reasons a value does not fit a type.
const (
	notInteger   = "is not an integer"
	notNumber    = "is not a number"
	notBoolean   = "is not a boolean"
	notDate      = "is not a date (YYYY-MM-DD)"
	notTimestamp = "is not a timestamp (YYYY-MM-DD HH:MM:SS, RFC 3339)"
	notUUID      = "is not a UUID"
	notJSON      = "is not valid JSON"
	notArray     = "is not an array"
	hasNUL       = "contains a NUL character"
)

// numericFits reports whether PostgreSQL's numeric holds the decimal literal s (number(s) is
// not 0): at most 131072 digits before the point and 16383 after it, and an exponent below
// 2^30 - 1; past them PostgreSQL says "value overflows numeric format" (a filter value or a
// cell of 1e999999 was a 500 or a failed COPY).
func numericFits(s string) bool {
	mant, exp := s, int64(0)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.ParseInt(s[i+1:], 10, 64)
		if err != nil || e >= math.MaxInt32/2 || e <= -math.MaxInt32/2 {
			return false
		}
		mant, exp = s[:i], e
	}
	whole, frac, _ := strings.Cut(strings.TrimLeft(mant, "+-"), ".")
	if int64(len(frac))-exp > 16383 {
		return false
	}
	digits := whole + frac
	lead := len(digits) - len(strings.TrimLeft(digits, "0"))
	return lead == len(digits) || int64(len(whole)-lead)+exp <= 131072
}

// jsonNUL reports valid JSON text holding a NUL character (written \u0000) in a string or a
// key: PostgreSQL's jsonb refuses it, as text refuses a NUL byte. The text is only decoded
// when it has the escape's digits.
func jsonNUL(s string) bool {
	if !strings.Contains(s, "u0000") {
		return false
	}
	dec := json.NewDecoder(strings.NewReader(s))
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if str, ok := tok.(string); ok && strings.IndexByte(str, 0) >= 0 {
			return true
		}
	}
}

// convertString is Text for a string (every CSV field, JSON strings), kept apart from
// convert so that the CSV path never boxes its fields into interfaces.
func convertString(t Type, s string) (string, string) {
	if t.IsArray() {
		return arrayString(t.Elem(), s)
	}
	switch t {
	case Integer, BigInt:
		if number(s) != 1 {
			return "", notInteger
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || t == Integer && (n < math.MinInt32 || n > math.MaxInt32) {
			return "", "is out of range for " + string(t)
		}
		return s, "" // PostgreSQL reads +7 and 007 itself
	case Numeric:
		if number(s) != 0 {
			if !numericFits(s) {
				return "", "is out of range for numeric"
			}
			return s, ""
		}
		switch strings.ToLower(s) {
		case "nan", "infinity", "+infinity", "-infinity":
			return s, ""
		}
		return "", notNumber
	case Boolean:
		if len(s) <= 5 {
			switch strings.ToLower(s) {
			case "true", "t", "yes", "y", "on", "1":
				return "true", ""
			case "false", "f", "no", "n", "off", "0":
				return "false", ""
			}
		}
		return "", notBoolean
	case Date:
		if t, _ := timeShape(s); t == Date {
			return s, ""
		}
		return "", notDate
	case Timestamptz:
		switch t, zone := timeShape(s); {
		case t == Timestamptz && zone:
			return s, ""
		case t == Timestamptz:
			return s + "+00", ""
		case t == Date:
			return s + " 00:00:00+00", ""
		}
		return "", notTimestamp
	case UUID:
		if isUUID(s) {
			return s, ""
		}
		return "", notUUID
	case JSONB: // a CSV field of a declared jsonb column is JSON text
		if !json.Valid([]byte(s)) {
			return "", notJSON
		}
		if jsonNUL(s) {
			return "", hasNUL
		}
		return s, ""
	}
	// PostgreSQL text cannot hold NUL or invalid UTF-8: reported here rather than failing
	// the whole COPY.
	if strings.IndexByte(s, 0) >= 0 {
		return "", hasNUL
	}
	if !utf8.ValidString(s) {
		return "", "is not valid UTF-8"
	}
	return s, ""
}

// convert is Text for the other non-nil values: JSON numbers, booleans, objects and
// arrays, and Parquet values.
func convert(t Type, v Value) (string, string) {
	if s, ok := v.(string); ok {
		return convertString(t, s)
	}
	if t.IsArray() {
		if items, ok := v.([]any); ok {
			return arrayText(t.Elem(), items)
		}
		return "", notArray
	}
	switch x := v.(type) {
	case json.Number:
		if t == Text || t == JSONB {
			return string(x), ""
		}
		return convertString(t, string(x))
	case int64:
		if t == Integer || t == BigInt || t == Numeric || t == Text || t == JSONB || t == Boolean && (x == 0 || x == 1) {
			return convertString(t, strconv.FormatInt(x, 10))
		}
	case bool:
		if t == Boolean || t == Text || t == JSONB {
			return strconv.FormatBool(x), ""
		}
	case float64: // NaN and infinities only (other floats are json.Number)
		if t == Numeric || t == Text {
			switch {
			case math.IsNaN(x):
				return "NaN", ""
			case math.IsInf(x, 1):
				return "Infinity", ""
			case math.IsInf(x, -1):
				return "-Infinity", ""
			}
			return strconv.FormatFloat(x, 'g', -1, 64), ""
		}
	case time.Time:
		switch t {
		case Date:
			return x.Format(time.DateOnly), ""
		case Timestamptz, Text:
			return x.UTC().Format(time.RFC3339Nano), ""
		}
	case json.RawMessage:
		if t == JSONB || t == Text {
			if !json.Valid(x) {
				return "", notJSON
			}
			if t == JSONB && jsonNUL(string(x)) {
				return "", hasNUL
			}
			return string(x), ""
		}
	case map[string]any, []any: // jsonb, or their JSON text in a text column
		if t == JSONB || t == Text {
			s, err := encodeJSON(v)
			if err != nil {
				return "", "cannot be written as JSON"
			}
			if t == JSONB && jsonNUL(s) {
				return "", hasNUL
			}
			return convertString(Text, s)
		}
	}
	switch t {
	case Integer, BigInt:
		return "", notInteger
	case Numeric:
		return "", notNumber
	case Boolean:
		return "", notBoolean
	case Date:
		return "", notDate
	case Timestamptz:
		return "", notTimestamp
	case UUID:
		return "", notUUID
	case JSONB:
		s, err := encodeJSON(v)
		if err != nil {
			return "", "cannot be written as JSON"
		}
		return s, ""
	}
	return "", "cannot be written as text"
}

// arrayString takes a CSV field as a JSON array ("[1,2]") or passes it on when it already
// is an array literal ("{1,2}").
func arrayString(elem Type, s string) (string, string) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
		return s, ""
	}
	var items []any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if !strings.HasPrefix(s, "[") || dec.Decode(&items) != nil || dec.More() {
		return "", notArray
	}
	return arrayText(elem, items)
}

// arrayText writes a PostgreSQL array literal. Every element is quoted, so that no element
// text (commas, braces, spaces, the word NULL) needs thought; NULL elements are bare NULL.
func arrayText(elem Type, items []any) (string, string) {
	var b strings.Builder
	b.WriteByte('{')
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		if it == nil {
			b.WriteString("NULL")
			continue
		}
		if _, nested := it.([]any); nested {
			return "", fmt.Sprintf("element %d is an array (nested arrays go in jsonb columns)", i+1)
		}
		s, reason := convert(elem, it)
		if reason != "" {
			return "", fmt.Sprintf("element %d %s", i+1, reason)
		}
		b.WriteByte('"')
		for j := 0; j < len(s); j++ {
			if s[j] == '"' || s[j] == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(s[j])
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String(), ""
}

// encodeJSON is json.Marshal without HTML escaping (jsonb keeps < as it is anyway).
func encodeJSON(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// shorten is the value as an error shows it: at most 60 bytes, cut on a rune boundary.
func shorten(v Value) string {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case json.Number:
		s = string(x)
	case time.Time:
		s = x.Format(time.RFC3339Nano)
	case json.RawMessage:
		s = string(x)
	default:
		if b, err := json.Marshal(v); err == nil {
			s = string(b)
		} else {
			s = fmt.Sprint(v)
		}
	}
	if len(s) <= 60 {
		return s
	}
	cut := 57
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// AppendCopyLine appends row, converted with the columns' types, as one line of COPY ...
// FROM STDIN in the text format (tab-separated, \N for NULL, backslash escapes, ending in a
// newline). line is put into a *RowError when a value does not fit its column.
func AppendCopyLine(dst []byte, cols []Column, row []Value, line int) ([]byte, error) {
	for i, c := range cols {
		if i > 0 {
			dst = append(dst, '\t')
		}
		s, null, err := c.Text(row[i])
		if err != nil {
			err.(*RowError).Line = line
			return dst, err
		}
		if null {
			dst = append(dst, '\\', 'N')
			continue
		}
		dst = appendCopyEscaped(dst, s)
	}
	return append(dst, '\n'), nil
}

// AppendCopyLine reads the next record and appends it to dst as AppendCopyLine (the
// function) does, with the reader's columns; io.EOF after the last record. CSV fields go
// straight from the parser to the line, without becoming Values.
func (r *Reader) AppendCopyLine(dst []byte) ([]byte, error) {
	cs, ok := r.src.(*csvSource)
	if !ok {
		row, err := r.Next()
		if err != nil {
			return dst, err
		}
		for i, f := range r.fill {
			if f != nil && row[i] == nil {
				row[i] = *f
			}
		}
		return AppendCopyLine(dst, r.cols, row, r.Line())
	}
	rec, err := cs.next()
	if err != nil {
		return dst, err
	}
	for i, c := range r.cols {
		if i > 0 {
			dst = append(dst, '\t')
		}
		if rec[i] == "" {
			if f := r.fill[i]; f != nil {
				dst = appendCopyEscaped(dst, *f)
			} else {
				dst = append(dst, '\\', 'N')
			}
			continue
		}
		s, reason := convertString(c.Type, rec[i])
		if reason != "" {
			return dst, &RowError{Line: cs.cur, Column: c.display(), Value: shorten(rec[i]), Reason: reason}
		}
		dst = appendCopyEscaped(dst, s)
	}
	return append(dst, '\n'), nil
}

// appendCopyEscaped escapes the bytes COPY's text format gives a meaning to.
func appendCopyEscaped(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		e := copyEscapes[s[i]]
		if e == 0 {
			continue
		}
		dst = append(append(dst, s[start:i]...), '\\', e)
		start = i + 1
	}
	return append(dst, s[start:]...)
}

// copyEscapes is the letter after the backslash for each byte that needs one.
var copyEscapes = [256]byte{'\\': '\\', '\t': 't', '\n': 'n', '\r': 'r'}
