package export

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/parquet-go/parquet-go"
)

// parquetWriter writes rows as a Parquet file, its columns typed by their kinds (all
// optional), a repeated name suffixed _2, _3... parquet-go buffers one row group at a time
// (by default the whole file), so a row group ends every parquetGroupBytes of values: memory
// stays bounded whatever the rows.
type parquetWriter struct {
	pw    *parquet.Writer //nolint:staticcheck // SA1019: the untyped writer fits rows whose schema is known only at run time
	cols  []Column
	leaf  []int // per column, its leaf: a Group orders its fields by name
	batch []parquet.Row
	group int64 // bytes of values in the row group being buffered
}

var parquetGroupBytes int64 = 64 << 20 // a variable for the tests

func newParquetWriter(w io.Writer, cols []Column, schema string) *parquetWriter {
	group := parquet.Group{}
	names := make([]string, len(cols))
	seen := map[string]int{}
	for i, c := range cols {
		name := c.Name
		if seen[name]++; seen[name] > 1 {
			name = fmt.Sprintf("%s_%d", name, seen[name])
		}
		names[i] = name
		var n parquet.Node
		switch c.Kind {
		case Int32:
			n = parquet.Int(32)
		case Int64:
			n = parquet.Int(64)
		case Double:
			n = parquet.Leaf(parquet.DoubleType)
		case Bool:
			n = parquet.Leaf(parquet.BooleanType)
		case Date:
			n = parquet.Date()
		case Timestamp:
			n = parquet.Timestamp(parquet.Microsecond)
		case JSON:
			n = parquet.JSON()
		default:
			n = parquet.String()
		}
		group[name] = parquet.Optional(n)
	}
	order := slices.Clone(names)
	slices.Sort(order)
	p := &parquetWriter{cols: cols, leaf: make([]int, len(cols)), batch: make([]parquet.Row, 0, 1024)}
	for i, n := range names {
		p.leaf[i] = slices.Index(order, n)
	}
	p.pw = parquet.NewWriter(w, parquet.NewSchema(schema, group), parquet.PageBufferSize(256<<10))
	return p
}

func (p *parquetWriter) row(vals []any) error {
	// The batch's rows are reused once written (parquet-go copies their values).
	var r parquet.Row
	if n := len(p.batch); n < cap(p.batch) && len(p.batch[:n+1][n]) == len(vals) {
		r = p.batch[:n+1][n]
	} else {
		r = make(parquet.Row, len(vals))
	}
	for i, v := range vals {
		pv, err := p.value(p.cols[i], v)
		if err != nil {
			return err
		}
		def := 0
		if !pv.IsNull() {
			def = 1
		}
		r[p.leaf[i]] = pv.Level(0, def, p.leaf[i])
		p.group += 8
		switch x := v.(type) {
		case string:
			p.group += int64(len(x))
		case []byte:
			p.group += int64(len(x))
		}
	}
	p.batch = append(p.batch, r)
	if len(p.batch) == cap(p.batch) || p.group >= parquetGroupBytes {
		if _, err := p.pw.WriteRows(p.batch); err != nil {
			return err
		}
		p.batch = p.batch[:0]
		if p.group >= parquetGroupBytes {
			p.group = 0
			return p.pw.Flush()
		}
	}
	return nil
}

// value is v as c's parquet value: integers as they are or parsed from their text, numbers
// parsed as doubles, dates as days and timestamps as microseconds since 1970 (from times,
// their RFC 3339 text, or those counts as integers), the rest as text.
func (p *parquetWriter) value(c Column, v any) (parquet.Value, error) {
	if v == nil {
		return parquet.NullValue(), nil
	}
	switch c.Kind {
	case Int32, Int64:
		n, ok := v.(int64)
		if !ok {
			var err error
			if n, err = strconv.ParseInt(text(v), 10, 64); err != nil {
				return parquet.Value{}, err
			}
		}
		if c.Kind == Int32 {
			return parquet.Int32Value(int32(n)), nil
		}
		return parquet.Int64Value(n), nil
	case Double:
		f, err := strconv.ParseFloat(text(v), 64)
		if err != nil {
			return parquet.Value{}, err
		}
		return parquet.DoubleValue(f), nil
	case Bool:
		return parquet.BooleanValue(v == true), nil
	case Date, Timestamp:
		if n, ok := v.(int64); ok { // days or microseconds since 1970 already
			if c.Kind == Date {
				return parquet.Int32Value(int32(n)), nil
			}
			return parquet.Int64Value(n), nil
		}
		t, ok := v.(time.Time)
		if s, isText := v.(string); isText { // a query's rows carry times as RFC 3339 text
			var err error
			if t, err = parseTime(s); err != nil {
				return parquet.Value{}, fmt.Errorf("column %s: %q is not a time", c.Name, s)
			}
			ok = true
		}
		if !ok {
			return parquet.Value{}, fmt.Errorf("column %s: %T is not a time", c.Name, v)
		}
		if c.Kind == Date {
			return parquet.Int32Value(int32(t.Unix() / 86400)), nil
		}
		return parquet.Int64Value(t.UnixMicro()), nil
	}
	if b, ok := v.([]byte); ok {
		return parquet.ByteArrayValue(b), nil
	}
	return parquet.ByteArrayValue([]byte(text(v))), nil
}

func (p *parquetWriter) close() error {
	if len(p.batch) > 0 {
		if _, err := p.pw.WriteRows(p.batch); err != nil {
			return err
		}
	}
	return p.pw.Close()
}
