package export

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/xuri/excelize/v2"
)

// excelWriter writes rows as one sheet, streamed through excelize's stream writer (which
// spills to a temporary file rather than memory).
type excelWriter struct {
	w    io.Writer
	f    *excelize.File
	sw   *excelize.StreamWriter
	cols []Column
	next int  // the next row's number
	esc  bool // escape formulas in text cells (Options.EscapeFormulas)
}

func newExcelWriter(w io.Writer, cols []Column, header, esc bool) (*excelWriter, error) {
	f := excelize.NewFile()
	sw, err := f.NewStreamWriter("Sheet1")
	if err != nil {
		f.Close()
		return nil, err
	}
	x := &excelWriter{w: w, f: f, sw: sw, cols: cols, next: 1, esc: esc}
	if header {
		names := make([]any, len(cols))
		for i, c := range cols {
			names[i] = c.Name
			if esc && formula(c.Name) {
				names[i] = "'" + c.Name
			}
		}
		if err := x.row(names); err != nil {
			f.Close()
			return nil, err
		}
	}
	return x, nil
}

// row writes a row: numerics as numbers, dates as YYYY-MM-DD, times in RFC 3339 (UTC), JSON
// and text as text.
func (x *excelWriter) row(vals []any) error {
	if x.next > MaxExcelRows+1 {
		return fmt.Errorf("an Excel sheet holds at most %d rows: export as csv or parquet", MaxExcelRows)
	}
	cells := make([]any, len(vals))
	for i, v := range vals {
		switch y := v.(type) {
		case nil:
		case json.Number:
			if f, err := y.Float64(); err == nil {
				cells[i] = f
			} else {
				cells[i] = string(y)
			}
		case json.RawMessage:
			cells[i] = string(y)
		case []byte:
			cells[i] = string(y)
			if x.cols[i].Kind == Double {
				if f, err := json.Number(y).Float64(); err == nil {
					cells[i] = f
				}
			}
		case time.Time:
			if x.cols[i].Kind == Date {
				cells[i] = y.Format(time.DateOnly)
			} else {
				cells[i] = y.UTC().Format(time.RFC3339Nano)
			}
		default:
			cells[i] = y
		}
		if s, ok := cells[i].(string); ok && x.esc && x.cols[i].Kind == Text && isText(v) && formula(s) {
			cells[i] = "'" + s
		}
	}
	cell, _ := excelize.CoordinatesToCellName(1, x.next)
	x.next++
	return x.sw.SetRow(cell, cells)
}

func (x *excelWriter) close() error {
	defer x.f.Close()
	if err := x.sw.Flush(); err != nil {
		return err
	}
	_, err := x.f.WriteTo(x.w)
	return err
}
