package records

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"dataplatform/store/ingest"

	"github.com/parquet-go/parquet-go"
	"github.com/xuri/excelize/v2"
)

// MaxExcelRows is what one Excel sheet holds (with its header row).
const MaxExcelRows = 1_048_575

// WriteParquet writes the rows of ExportRows (format parquet) as a Parquet file: integers,
// booleans, dates and timestamps typed, numerics as doubles, JSON and arrays as JSON
// strings. parquet-go buffers one row group at a time, so memory is bounded by it.
func WriteParquet(w io.Writer, rows *sql.Rows, t *Table, fields []string) error {
	group := parquet.Group{}
	for _, f := range fields {
		group[f] = parquetNode(t.Column(f))
	}
	schema := parquet.NewSchema("record", group)
	// A Group orders its fields by name: leaf i is the i-th name in that order.
	order := slices.Clone(fields)
	slices.Sort(order)
	leaf := map[string]int{}
	for i, f := range order {
		leaf[f] = i
	}
	pw := parquet.NewWriter(w, schema, parquet.PageBufferSize(256<<10))
	vals := make([]any, len(fields))
	ptrs := make([]any, len(fields))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	batch := make([]parquet.Row, 0, 1024)
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		r := make(parquet.Row, len(fields))
		for i, f := range fields {
			v, err := parquetValue(t.Column(f), vals[i])
			if err != nil {
				return err
			}
			def := 0
			if !v.IsNull() {
				def = 1
			}
			r[leaf[f]] = v.Level(0, def, leaf[f])
		}
		batch = append(batch, r)
		if len(batch) == cap(batch) {
			if _, err := pw.WriteRows(batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(batch) > 0 {
		if _, err := pw.WriteRows(batch); err != nil {
			return err
		}
	}
	return pw.Close()
}

func parquetNode(c ingest.Column) parquet.Node {
	var n parquet.Node
	switch c.Type {
	case ingest.Integer:
		n = parquet.Int(32)
	case ingest.BigInt:
		n = parquet.Int(64)
	case ingest.Numeric:
		n = parquet.Leaf(parquet.DoubleType)
	case ingest.Boolean:
		n = parquet.Leaf(parquet.BooleanType)
	case ingest.Date:
		n = parquet.Date()
	case ingest.Timestamptz:
		n = parquet.Timestamp(parquet.Microsecond)
	case ingest.JSONB:
		n = parquet.JSON()
	default:
		n = parquet.String()
	}
	return parquet.Optional(n) // every field may be null (system fields never are)
}

func parquetValue(c ingest.Column, v any) (parquet.Value, error) {
	if v == nil {
		return parquet.NullValue(), nil
	}
	switch c.Type {
	case ingest.Integer:
		n, ok := v.(int64)
		if !ok {
			return parquet.Value{}, fmt.Errorf("integer column %s: %T", c.Name, v)
		}
		return parquet.Int32Value(int32(n)), nil
	case ingest.BigInt:
		n, ok := v.(int64)
		if !ok {
			return parquet.Value{}, fmt.Errorf("bigint column %s: %T", c.Name, v)
		}
		return parquet.Int64Value(n), nil
	case ingest.Numeric:
		f, err := strconv.ParseFloat(string(asBytes(v)), 64)
		if err != nil {
			return parquet.Value{}, err
		}
		return parquet.DoubleValue(f), nil
	case ingest.Boolean:
		return parquet.BooleanValue(v.(bool)), nil
	case ingest.Date:
		tm := v.(time.Time)
		return parquet.Int32Value(int32(tm.Unix() / 86400)), nil
	case ingest.Timestamptz:
		return parquet.Int64Value(v.(time.Time).UnixMicro()), nil
	}
	return parquet.ByteArrayValue(asBytes(v)), nil
}

func asBytes(v any) []byte {
	switch x := v.(type) {
	case []byte:
		return x
	case string:
		return []byte(x)
	}
	return []byte(fmt.Sprint(v))
}

// WriteExcel writes the rows of ExportRows (format excel) as one sheet, streamed through
// excelize's stream writer (which spills to a temporary file rather than memory).
func WriteExcel(w io.Writer, rows *sql.Rows, t *Table, fields []string, header bool) error {
	f := excelize.NewFile()
	defer f.Close()
	sw, err := f.NewStreamWriter("Sheet1")
	if err != nil {
		return err
	}
	r := 1
	if header {
		h := make([]any, len(fields))
		for i, x := range fields {
			h[i] = x
		}
		if err := sw.SetRow("A1", h); err != nil {
			return err
		}
		r++
	}
	vals := make([]any, len(fields))
	ptrs := make([]any, len(fields))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		cells := make([]any, len(fields))
		for i, x := range fields {
			c := t.Column(x)
			switch v := vals[i].(type) {
			case nil:
			case []byte:
				if c.Type == ingest.Numeric {
					var n json.Number = json.Number(v)
					if fl, err := n.Float64(); err == nil {
						cells[i] = fl
						continue
					}
				}
				cells[i] = string(v)
			case time.Time:
				if c.Type == ingest.Date {
					cells[i] = v.Format(time.DateOnly)
				} else {
					cells[i] = v.UTC().Format(time.RFC3339Nano)
				}
			default:
				cells[i] = v
			}
		}
		cell, _ := excelize.CoordinatesToCellName(1, r)
		if err := sw.SetRow(cell, cells); err != nil {
			return err
		}
		r++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if err := sw.Flush(); err != nil {
		return err
	}
	_, err = f.WriteTo(w)
	return err
}
