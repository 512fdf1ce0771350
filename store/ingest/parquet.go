package ingest

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// Parquet rows arrive flat: one value per leaf column with repetition and definition levels
// (Dremel encoding). pnode rebuilds each top-level field's value from them, converting
// leaves by their logical type, since parquet-go's reflection-based reading into `any`
// drops logical types (dates come back as int32, decimals as floats).

type pkind int

const (
	leafNode  pkind = iota
	groupNode       // map[string]any of its fields
	listNode        // LIST: []any of the elements under its repeated child
	mapNode         // MAP: map[string]any from its repeated key_value child
	passNode        // the repeated middle of a LIST: stands for its only child
	pairNode        // the repeated key_value of a MAP: a member
)

type pnode struct {
	name               string
	kind               pkind
	optional, repeated bool
	children           []*pnode
	leaves             int                     // leaf columns under the node
	typ                Type                    // leaves: the PostgreSQL type of a value
	conv               func(parquet.Value) any // leaves
}

// readNode is buildNode with a panic of parquet-go made the file's error: v0.32.0 panics on a
// leaf column annotated as a MAP (its mapType's Kind: "cannot call Kind on parquet MAP type",
// found by a 10-minute FuzzParquet run).
func readNode(c *parquet.Column) (n *pnode, err error) {
	defer func() {
		if v := recover(); v != nil {
			n, err = nil, &RowError{Reason: fmt.Sprintf("not a readable Parquet file: parquet-go: %v", v)}
		}
	}()
	return buildNode(c), nil
}

func buildNode(c *parquet.Column) *pnode {
	n := &pnode{name: c.Name(), optional: c.Optional(), repeated: c.Repeated()}
	if c.Leaf() {
		n.kind, n.leaves = leafNode, 1
		n.typ, n.conv = leafType(c.Type())
		return n
	}
	n.kind = groupNode
	if lt := c.Type().LogicalType(); lt != nil {
		switch lt.Value.(type) {
		case *format.ListType:
			n.kind = listNode
		case *format.MapType:
			n.kind = mapNode
		}
	}
	for _, ch := range c.Columns() {
		child := buildNode(ch)
		n.children = append(n.children, child)
		n.leaves += child.leaves
	}
	if len(n.children) != 1 || !n.children[0].repeated {
		n.kind = groupNode // not the LIST/MAP shape the spec requires: show it as it is
		return n
	}
	mid := n.children[0]
	switch {
	case n.kind == listNode && mid.kind == groupNode && len(mid.children) == 1 && mid.name != "array" && mid.name != n.name+"_tuple":
		mid.kind = passNode // three-level list; otherwise the repeated node is the element
	case n.kind == mapNode && mid.kind == groupNode && len(mid.children) == 2:
		mid.kind = pairNode
	case n.kind == mapNode:
		n.kind = groupNode
	}
	return n
}

// columnType is the column type of a top-level field: arrays for lists of scalars, jsonb for
// anything nested deeper (PostgreSQL arrays are rectangular and typed).
func (n *pnode) columnType() Type {
	elem := n
	switch {
	case n.kind == leafNode && !n.repeated:
		return n.typ
	case n.kind == leafNode: // a bare repeated field is a list of it
	case n.kind == listNode && !n.repeated:
		switch mid := n.children[0]; {
		case mid.kind == leafNode: // two-level list: the repeated leaf is the element
			elem = mid
		case mid.kind == passNode && mid.children[0].kind == leafNode && !mid.children[0].repeated:
			elem = mid.children[0]
		default:
			return JSONB
		}
	default:
		return JSONB
	}
	if elem.typ == JSONB {
		return JSONB
	}
	return ArrayOf(elem.typ)
}

// value assembles the node's value from the values of its leaves for one instance of it.
func (n *pnode) value(cols [][]parquet.Value, def, rep int) any {
	if n.repeated {
		def++
		rep++
		if cols[0][0].DefinitionLevel() < def {
			return []any{}
		}
		var out []any
		sub := make([][]parquet.Value, len(cols))
		for len(cols[0]) > 0 {
			for j, c := range cols { // an element ends where a value repeats at this depth
				k := 1
				for k < len(c) && c[k].RepetitionLevel() > rep {
					k++
				}
				sub[j], cols[j] = c[:k], c[k:]
			}
			out = append(out, n.content(sub, def, rep))
		}
		return out
	}
	if n.optional {
		def++
		if cols[0][0].DefinitionLevel() < def {
			return nil
		}
	}
	return n.content(cols, def, rep)
}

func (n *pnode) content(cols [][]parquet.Value, def, rep int) any {
	switch n.kind {
	case leafNode:
		return n.conv(cols[0][0])
	case passNode:
		return n.children[0].value(cols, def, rep)
	case listNode:
		return n.children[0].value(cols, def, rep)
	case pairNode:
		k, _ := convert(Text, n.children[0].value(cols[:n.children[0].leaves], def, rep))
		return member{k, n.children[1].value(cols[n.children[0].leaves:], def, rep)}
	case mapNode:
		m := map[string]any{}
		for _, p := range n.children[0].value(cols, def, rep).([]any) {
			m[p.(member).key] = p.(member).val
		}
		return m
	}
	m := make(map[string]any, len(n.children))
	off := 0
	for _, ch := range n.children {
		m[ch.name] = ch.value(cols[off:off+ch.leaves], def, rep)
		off += ch.leaves
	}
	return m
}

// leafType maps a leaf's logical (or else physical) type to a PostgreSQL type and a
// converter to the Values Column.Text takes.
func leafType(t parquet.Type) (Type, func(parquet.Value) any) {
	var logical any
	if lt := t.LogicalType(); lt != nil {
		logical = lt.Value
	}
	switch x := logical.(type) {
	case *format.StringType, *format.EnumType:
		return Text, func(v parquet.Value) any { return string(v.ByteArray()) }
	case *format.JsonType:
		return JSONB, func(v parquet.Value) any { return json.RawMessage(bytes.Clone(v.ByteArray())) }
	case *format.UUIDType:
		return UUID, func(v parquet.Value) any { return formatUUID(v.ByteArray()) }
	case *format.DateType:
		return Date, func(v parquet.Value) any {
			return time.Unix(int64(v.Int32())*86400, 0).UTC().Format(time.DateOnly)
		}
	case *format.TimestampType:
		// Timestamps not adjusted to UTC (local, "wall clock" time) are read as UTC too:
		// the file does not say which zone they were in.
		at := timeOf(&x.Unit)
		return Timestamptz, func(v parquet.Value) any { return at(v.Int64()) }
	case *format.TimeType:
		at := timeOf(&x.Unit)
		return Text, func(v parquet.Value) any {
			n := v.Int64()
			if v.Kind() == parquet.Int32 {
				n = int64(v.Int32())
			}
			return at(n).Format("15:04:05.999999999")
		}
	case *format.DecimalType:
		scale := int(x.Scale)
		return Numeric, func(v parquet.Value) any { return json.Number(decimalText(v, scale)) }
	case *format.IntType:
		switch {
		case x.BitWidth == 64 && !x.IsSigned: // beyond bigint
			return Numeric, func(v parquet.Value) any { return json.Number(strconv.FormatUint(v.Uint64(), 10)) }
		case x.BitWidth == 64:
			return BigInt, func(v parquet.Value) any { return v.Int64() }
		case x.BitWidth == 32 && !x.IsSigned:
			return BigInt, func(v parquet.Value) any { return int64(v.Uint32()) }
		}
		return Integer, func(v parquet.Value) any { return int64(v.Int32()) }
	}
	switch t.Kind() {
	case parquet.Boolean:
		return Boolean, func(v parquet.Value) any { return v.Boolean() }
	case parquet.Int32:
		return Integer, func(v parquet.Value) any { return int64(v.Int32()) }
	case parquet.Int64:
		return BigInt, func(v parquet.Value) any { return v.Int64() }
	case parquet.Int96: // legacy Impala/Spark timestamps: nanoseconds of the day, Julian day
		return Timestamptz, func(v parquet.Value) any {
			i := v.Int96()
			nanos := int64(i[1])<<32 | int64(i[0])
			return time.Unix((int64(i[2])-2440588)*86400, nanos).UTC()
		}
	case parquet.Float:
		return Numeric, func(v parquet.Value) any { return floatValue(float64(v.Float()), 32) }
	case parquet.Double:
		return Numeric, func(v parquet.Value) any { return floatValue(v.Double(), 64) }
	case parquet.FixedLenByteArray: // opaque bytes: hex is the only safe text
		return Text, func(v parquet.Value) any { return hex.EncodeToString(v.ByteArray()) }
	}
	// Unannotated BYTE_ARRAY: older writers (Hive, Impala) store strings so.
	return Text, func(v parquet.Value) any { return string(v.ByteArray()) }
}

// timeOf converts a count of the unit since the Unix epoch (without overflowing for
// milliseconds and microseconds far from 1970, as a time.Duration would).
func timeOf(u *format.TimeUnit) func(int64) time.Time {
	switch u.Value.(type) {
	case *format.MilliSeconds:
		return func(n int64) time.Time { return time.UnixMilli(n).UTC() }
	case *format.MicroSeconds:
		return func(n int64) time.Time { return time.UnixMicro(n).UTC() }
	}
	return func(n int64) time.Time { return time.Unix(0, n).UTC() }
}

// floatValue keeps the shortest decimal that reads back as the same float, so a FLOAT 0.1
// is 0.1 and not 0.100000001490116; NaN and infinities have no JSON number form.
func floatValue(f float64, bits int) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return f
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, bits))
}

// decimalText writes an unscaled integer (INT32, INT64 or big-endian two's complement
// bytes) with scale digits after the point.
func decimalText(v parquet.Value, scale int) string {
	var u *big.Int
	switch v.Kind() {
	case parquet.Int32:
		u = big.NewInt(int64(v.Int32()))
	case parquet.Int64:
		u = big.NewInt(v.Int64())
	default:
		b := v.ByteArray()
		u = new(big.Int).SetBytes(b)
		if len(b) > 0 && b[0]&0x80 != 0 {
			u.Sub(u, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
		}
	}
	s := u.String()
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	if scale > 0 {
		if len(s) <= scale {
			s = strings.Repeat("0", scale-len(s)+1) + s
		}
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	} else if scale < 0 {
		s += strings.Repeat("0", -scale)
	}
	if neg {
		s = "-" + s
	}
	return s
}

func formatUUID(b []byte) string {
	if len(b) != 16 {
		return hex.EncodeToString(b)
	}
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// parquetSource reads a Parquet file's rows group by group, a batch at a time.
type parquetSource struct {
	f      *os.File
	pf     *parquet.File
	groups []parquet.RowGroup
	g      int
	rows   parquet.Rows
	buf    []parquet.Row
	batch  int // records read at a time from the current row group
	leaves []*parquet.Column
	check  chunkScanner
	n, i   int
	nodes  []*pnode // top-level fields
	starts []int    // first leaf column of each
	fields []int    // the field of each column read
	leaf   [][]parquet.Value
	cur    int
}

// openParquetFile is parquet.OpenFile, with a panic of it made an error: parquet-go v0.32.0
// slices its schema with a group's NumChildren unchecked for a negative count (FuzzParquet:
// "slice bounds out of range [::-12]" in column.go's allocate).
func openParquetFile(f *os.File, size int64) (pf *parquet.File, err error) {
	defer func() {
		if v := recover(); v != nil {
			pf, err = nil, fmt.Errorf("parquet-go: %v", v)
		}
	}()
	// The page index and bloom filters are not needed to read every row, and their sizes are
	// the file's word.
	return parquet.OpenFile(f, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
}

// openParquetSource opens a Parquet file and returns its columns, typed from its schema. With
// want, it reads those columns (by original name) instead of all.
func openParquetSource(path string, want []Column) (*parquetSource, []Column, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	if err := checkParquetFooter(f, st.Size()); err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	pf, err := openParquetFile(f, st.Size())
	if err != nil {
		_ = f.Close()
		return nil, nil, &RowError{Reason: "not a readable Parquet file: " + err.Error()}
	}
	s := &parquetSource{f: f, pf: pf, groups: pf.RowGroups(), leaves: leafColumns(pf), buf: make([]parquet.Row, 64)}
	s.check.leaves = s.leaves
	if n := len(pf.Root().Columns()); n > MaxColumns {
		_ = f.Close()
		return nil, nil, tooManyColumns(fmt.Sprintf("the file has %d columns", n), 0)
	}
	var names []string
	leaves := 0
	for _, c := range pf.Root().Columns() {
		n, err := readNode(c)
		if err != nil {
			_ = f.Close()
			return nil, nil, err
		}
		s.nodes = append(s.nodes, n)
		s.starts = append(s.starts, leaves)
		names = append(names, n.name)
		leaves += n.leaves
	}
	s.leaf = make([][]parquet.Value, leaves)
	cols := columns(names)
	for i, n := range s.nodes {
		cols[i].Type, cols[i].Nullable = n.columnType(), n.optional
	}
	if want == nil {
		for i := range cols {
			s.fields = append(s.fields, i)
		}
		return s, cols, nil
	}
	for _, c := range want {
		i := indexOf(names, c.Original)
		if i < 0 {
			_ = f.Close()
			return nil, nil, &RowError{Reason: fmt.Sprintf("the file has no column %q", c.Original)}
		}
		s.fields = append(s.fields, i)
	}
	return s, cols, nil
}

func indexOf(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return -1
}

func (s *parquetSource) read(row []Value) error {
	r, err := s.next()
	if err != nil {
		return err
	}
	s.cur++
	clear(s.leaf)
	for start, k := 0, 1; k <= len(r); k++ { // values come ordered by leaf column
		if k == len(r) || r[k].Column() != r[start].Column() {
			if c := r[start].Column(); c >= 0 && c < len(s.leaf) {
				s.leaf[c] = r[start:k]
			}
			start = k
		}
	}
	for _, l := range s.leaf {
		if len(l) == 0 {
			return &RowError{Line: s.cur, Reason: "the row is missing values of a column"}
		}
	}
	for i, f := range s.fields {
		n := s.nodes[f]
		row[i] = n.value(s.leaf[s.starts[f]:s.starts[f]+n.leaves], 0, 0)
	}
	return nil
}

func (s *parquetSource) next() (row parquet.Row, err error) {
	// parquet-go v0.32.0 panics on some malformed pages as it decodes them (a nil dereference in
	// decodeDataPage, found by a 10-minute FuzzParquet run): the file's fault, said as such.
	defer func() {
		if v := recover(); v != nil {
			row, err = nil, &RowError{Line: s.cur + 1, Reason: fmt.Sprintf("not a readable Parquet file: parquet-go: %v", v)}
		}
	}()
	for s.i >= s.n {
		if s.rows == nil {
			if s.g >= len(s.groups) {
				return nil, io.EOF
			}
			if err := s.checkGroup(); err != nil {
				return nil, err
			}
			s.rows = s.groups[s.g].Rows()
			s.g++
		}
		n, err := s.rows.ReadRows(s.buf[:s.batch])
		s.n, s.i = n, 0
		if err == io.EOF || (err == nil && n == 0) {
			_ = s.rows.Close()
			s.rows = nil
		} else if err != nil {
			return nil, &RowError{Line: s.cur + 1, Reason: "cannot read the Parquet file: " + err.Error()}
		}
	}
	s.i++
	return s.buf[s.i-1], nil
}

// checkGroup checks the sizes of the next row group before any of it is decoded, and sizes
// batches after its largest records: 64 records, fewer when they are large, so that a batch
// holds at most about MaxParquetRecordValues values.
func (s *parquetSource) checkGroup() error {
	if err := s.check.checkRowGroup(s.f, s.pf.Metadata(), s.g); err != nil {
		return err
	}
	values, err := recordValues(s.groups[s.g], s.g, s.leaves)
	if err != nil {
		return err
	}
	s.batch = int(min(max(MaxParquetRecordValues/max(values, 1), 1), int64(len(s.buf))))
	return nil
}

func (s *parquetSource) line() int { return s.cur }

func (s *parquetSource) Close() error {
	if s.rows != nil {
		_ = s.rows.Close()
	}
	s.check.close()
	return s.f.Close()
}

// inferParquet takes the types from the file's schema and reads the values only to count
// nulls (an OPTIONAL column without any is not nullable) and measure text.
func inferParquet(path string, limit int64) (*Schema, error) {
	src, cols, err := openParquetSource(path, nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = src.Close() }()
	s := &Schema{Format: Parquet, Columns: cols}
	st := make([]colState, len(cols))
	row := make([]Value, len(cols))
	for {
		if limit > 0 && s.Rows == limit {
			s.Sampled = true
			break
		}
		if err := src.read(row); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		for i, v := range row {
			switch x := v.(type) {
			case nil:
				st[i].nulls++
			case string:
				st[i].length(x)
			}
		}
		s.Rows++
	}
	for i := range st {
		st[i].t = cols[i].Type
	}
	finish(s, st)
	return s, nil
}
