package export

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
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
	// the styles of date and timestamp cells: dates shown YYYY-MM-DD, times (UTC) with the time
	dateStyle, timeStyle int
}

// The number formats of date and timestamp cells (the values are Excel's own dates).
const (
	excelDateFormat = "yyyy-mm-dd"
	excelTimeFormat = "yyyy-mm-dd hh:mm:ss"
)

func newExcelWriter(w io.Writer, cols []Column, header, esc bool) (*excelWriter, error) {
	f := excelize.NewFile()
	sw, err := f.NewStreamWriter("Sheet1")
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	x := &excelWriter{w: w, f: f, sw: sw, cols: cols, next: 1, esc: esc}
	for _, st := range []struct {
		id  *int
		fmt string
	}{{&x.dateStyle, excelDateFormat}, {&x.timeStyle, excelTimeFormat}} {
		if *st.id, err = f.NewStyle(&excelize.Style{CustomNumFmt: &st.fmt}); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	if header {
		names := make([]any, len(cols))
		for i, c := range cols {
			names[i] = c.Name
			if esc && formula(c.Name) {
				names[i] = "'" + c.Name
			}
		}
		if err := x.row(names); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	return x, nil
}

// row writes a row as native cells: numbers as numbers, booleans as booleans, dates and
// timestamps as Excel dates (timestamps in UTC; shown as excelDateFormat and excelTimeFormat),
// JSON and text as text. A date or timestamp column's value may come as time.Time or as its
// RFC 3339 text (a query's rows); one Excel cannot hold (before 1900) is written as text.
func (x *excelWriter) row(vals []any) error {
	if x.next > MaxExcelRows+1 {
		return fmt.Errorf("an Excel sheet holds at most %d rows: export as csv or parquet", MaxExcelRows)
	}
	cells := make([]any, len(vals))
	for i, v := range vals {
		switch y := v.(type) {
		case nil:
		case time.Time:
			cells[i] = x.timeCell(i, y)
		case json.Number, json.RawMessage, []byte, string:
			// Text as the driver gives it (a numeric's text, a query's RFC 3339 times).
			s := text(v)
			cells[i] = s
			_, number := v.(json.Number)
			switch k := x.cols[i].Kind; {
			case number || (k == Double || k == Int32 || k == Int64) && isText(v):
				if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
					cells[i] = f // NaN and Infinity stay text: Excel has no such numbers
				}
			case (k == Date || k == Timestamp) && isText(v):
				if t, err := parseTime(s); err == nil {
					cells[i] = x.timeCell(i, t)
				}
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

// timeCell is t as the cell of column i: an Excel date (in UTC) styled as the column's kind,
// or RFC 3339 text when Excel has no date for it (before 1900).
func (x *excelWriter) timeCell(i int, t time.Time) any {
	t = t.UTC()
	if t.Year() < 1900 {
		if x.cols[i].Kind == Date {
			return t.Format(time.DateOnly)
		}
		return t.Format(time.RFC3339Nano)
	}
	style := x.timeStyle
	if x.cols[i].Kind == Date {
		style = x.dateStyle
	}
	return excelize.Cell{StyleID: style, Value: t}
}

func (x *excelWriter) close() error {
	defer func() { _ = x.f.Close() }()
	if err := x.sw.Flush(); err != nil {
		return err
	}
	_, err := x.f.WriteTo(x.w)
	return err
}
