package ingest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The file targets run what the dataset loader runs on an upload: Detect on the file's
// head, InferSample over the whole file, OpenSchema with the inferred schema and every
// record through AppendCopyLine. Invariants: the types inferred accept every value they were
// inferred from (reading the file back fails nowhere), the file has as many records as
// inference counted, each COPY line has one field per column, and a column has as many
// NULLs as inference counted. Inputs are bounded to 64 KiB (HeadSize) to keep each run short.

// maxFuzzFile bounds a fuzzed file.
const maxFuzzFile = HeadSize

// FuzzDetect checks that Detect decides on any head and name without failing: it answers a
// format or a *FormatError, Parquet exactly for the PAR1 signature, JSON only for text that
// starts (after blanks and a byte order mark) with [.
func FuzzDetect(f *testing.F) {
	f.Add([]byte("id,name\n1,Ann\n"), "people.csv")
	f.Add([]byte(`[{"a": 1}]`), "a.json")
	f.Add([]byte("{\"a\": 1}\n{\"a\": 2}\n"), "a.ndjson")
	f.Add([]byte("PAR1\x00\x00"), "x.parquet")
	f.Add([]byte("\xef\xbb\xbfa;b\r\n1;2\r\n"), "")
	f.Add([]byte("PK\x03\x04"), "book.xlsx")
	f.Add([]byte("just one line of text"), "notes.txt")
	f.Fuzz(func(t *testing.T, head []byte, name string) {
		if len(head) > HeadSize {
			head = head[:HeadSize]
		}
		format, err := Detect(head, name)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) || format != "" {
				t.Fatalf("Detect: %q, %v (%T)", format, err, err)
			}
			return
		}
		switch format {
		case Parquet:
			if !bytes.HasPrefix(head, []byte("PAR1")) {
				t.Fatalf("Parquet without the signature: %q", head)
			}
		case JSON:
			if s := bytes.TrimLeft(bytes.TrimPrefix(head, bom), " \t\r\n"); len(s) == 0 || s[0] != '[' {
				t.Fatalf("JSON that does not start with [: %q", head)
			}
		case CSV, NDJSON:
		default:
			t.Fatalf("unknown format %q", format)
		}
	})
}

// FuzzCSV runs the loader on arbitrary CSV text: dialect detection, type inference, reading.
func FuzzCSV(f *testing.F) {
	for _, s := range []string{
		"id,name,email,phone,zip,credit,joined,active\n1,Ann,ann@example.com,+15557624039,02134,12.50,2024-01-05,true\n2,Bob,,,,-3,2024-02-29,no\n",
		"a;b;c\r\n1;\"x;y\";2024-01-05T10:00:00Z\r\n2;\"he said \"\"hi\"\"\";2024-01-05 10:00:00+02:00\r\n",
		"x\ty\n0\t1\n1\t0\ntrue\tfalse\n",
		"'a'|'b'\n'1'|'it''s'\n",
		"n,u\n9223372036854775808,123e4567-e89b-12d3-a456-426614174000\n-0,00000000-0000-0000-0000-000000000000\n",
		"\xef\xbb\xbfname,note\n\"multi\nline\",\"5\"\" screen\"\n",
		"a,b\n1,2\n3\n",
		"a,b\n\"unclosed,2\n",
		",Unnamed\n0,x\n1,y\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzFile {
			t.Skip()
		}
		loadFile(t, data, CSV)
	})
}

// FuzzJSON runs the loader on arbitrary JSON array or NDJSON text.
func FuzzJSON(f *testing.F) {
	for _, s := range []struct {
		data   string
		ndjson bool
	}{
		{`[{"id": 1, "name": "Ann", "tags": ["a", "b"], "meta": {"x": 1}, "at": "2024-01-05T10:00:00Z", "ok": true, "n": 1.5}, {"id": 2, "name": null, "extra": [1, 2.5]}]`, false},
		{`[]`, false},
		{`[{"a": 1, "a": 2}, {"b": [[1], [2]]}, {"a": "x"}]`, false},
		{`[{"u": "123e4567-e89b-12d3-a456-426614174000", "d": "2024-02-29"}, {"u": null, "d": "2024-03-01T00:00:00+01:00"}]`, false},
		{"{\"id\": 1, \"v\": 9223372036854775807}\n{\"id\": 2, \"v\": 9223372036854775808}\n", true},
		{"{\"a\": [true, null, false]}\r\n\r\n{\"a\": []}\n{\"a\": [1, \"x\"]}\n", true},
		{"{\"a\": 1}\n{\"a\": 2", true},
		{"{\"s\": \"\\u0000\"}\n", true},
	} {
		f.Add([]byte(s.data), s.ndjson)
	}
	f.Fuzz(func(t *testing.T, data []byte, ndjson bool) {
		if len(data) > maxFuzzFile {
			t.Skip()
		}
		format := JSON
		if ndjson {
			format = NDJSON
		}
		loadFile(t, data, format)
	})
}

// FuzzParquet runs the loader on arbitrary bytes read as Parquet (the seeds are files
// parquet-go wrote, see testdata/fuzz/FuzzParquet).
func FuzzParquet(f *testing.F) {
	f.Add([]byte("PAR1"))
	f.Add([]byte("PAR1\x15\x00PAR1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzFile {
			t.Skip()
		}
		loadFile(t, data, Parquet)
	})
}

// maxFuzzHeap bounds the heap reading a fuzzed file may hold: the Parquet limits let a row
// group hold 256 MiB (MaxParquetRowGroupBytes), and a batch of records at most about 200 MiB.
// It is checked only while fuzzing: the seeds run beside the package's other tests, and the
// heap is not only theirs.
const maxFuzzHeap = 1 << 30

// fuzzing says whether this process runs a fuzz target's generated inputs.
func fuzzing() bool { return flag.Lookup("test.fuzz").Value.String() != "" }

// watchHeap samples the live heap every millisecond until the returned function is called,
// which returns the highest sample. An input over maxFuzzHeap is also written to
// $FUZZ_HEAP_DIR at once: a worker that runs out of memory is killed before the fuzzer can
// save what it was running.
func watchHeap(data []byte) func() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	done, peak := make(chan struct{}), make(chan uint64)
	go func() {
		var most uint64
		saved := false
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				peak <- most
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			most = max(most, sample[0].Value.Uint64())
			if dir := os.Getenv("FUZZ_HEAP_DIR"); most > maxFuzzHeap && !saved && dir != "" {
				saved = true
				name := filepath.Join(dir, fmt.Sprintf("heap-%x", sha256.Sum256(data)))
				_ = os.WriteFile(name, data, 0o600)
			}
		}
	}()
	return func() uint64 {
		close(done)
		return <-peak
	}
}

// loadFile writes data to a file and loads it as format f, checking the invariants above
// and, while fuzzing, the heap it held.
func loadFile(t *testing.T, data []byte, f Format) {
	if fuzzing() {
		peak := watchHeap(data)
		defer func() {
			if p := peak(); p > maxFuzzHeap {
				t.Errorf("a file of %d bytes made reading it hold %d MiB of heap", len(data), p>>20)
			}
		}()
	}
	load(t, data, f)
}

func load(t *testing.T, data []byte, f Format) {
	path := filepath.Join(t.TempDir(), "upload")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	head := data[:min(len(data), HeadSize)]
	if got, err := Detect(head, "upload."+string(f)); err != nil || got != f {
		if f != Parquet { // the loader refuses what Detect does not call f; Parquet is read anyway, to reach its reader
			return
		}
	}
	s, err := Infer(path, f)
	if err != nil || len(s.Columns) == 0 {
		return // the file is refused before anything is loaded (no columns: by store/datasets)
	}
	r, err := OpenSchema(path, s)
	if err != nil {
		t.Fatalf("inferred %+v, then OpenSchema: %v", s, err)
	}
	defer r.Close()
	nulls := make([]int64, len(s.Columns))
	var rows int64
	var line []byte
	for {
		line, err = r.AppendCopyLine(line[:0])
		if err == io.EOF {
			break
		}
		if err != nil {
			// No PostgreSQL type holds a NUL character or invalid UTF-8: such a file is
			// refused with the line and column, whatever was inferred.
			var re *RowError
			if errors.As(err, &re) && re.Column != "" && (strings.Contains(re.Reason, "NUL character") || strings.Contains(re.Reason, "valid UTF-8")) {
				return
			}
			t.Fatalf("record %d (line %d) does not fit the inferred %s: %v", rows+1, r.Line(), columnTypes(s.Columns), err)
		}
		rows++
		fields := strings.Split(strings.TrimSuffix(string(line), "\n"), "\t")
		if len(fields) != len(s.Columns) || !strings.HasSuffix(string(line), "\n") {
			t.Fatalf("COPY line %q has %d fields for %d columns", line, len(fields), len(s.Columns))
		}
		for i, v := range fields {
			if v == `\N` {
				nulls[i]++
				continue
			}
			switch v = copyUnescape(v); {
			case !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0:
				t.Fatalf("column %s: %q in a COPY field (PostgreSQL refuses NUL and invalid UTF-8)", s.Columns[i].Name, v)
			case s.Columns[i].Type == JSONB && jsonHasNUL(v):
				t.Fatalf("column %s: jsonb %q has a \\u0000 (PostgreSQL's jsonb refuses it)", s.Columns[i].Name, v)
			}
		}
	}
	if rows != s.Rows {
		t.Fatalf("inference counted %d records, reading found %d", s.Rows, rows)
	}
	for i, c := range s.Columns {
		if nulls[i] != c.NullCount {
			t.Fatalf("column %s: inference counted %d NULLs, reading found %d", c.Name, c.NullCount, nulls[i])
		}
	}
}

// copyUnescape undoes appendCopyEscaped.
func copyUnescape(s string) string {
	return strings.NewReplacer(`\\`, `\`, `\t`, "\t", `\n`, "\n", `\r`, "\r").Replace(s)
}

// jsonHasNUL reports JSON text with a NUL character in a string or key (written \u0000).
func jsonHasNUL(s string) bool {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return false
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case string:
			return strings.IndexByte(x, 0) >= 0
		case []any:
			return slices.ContainsFunc(x, walk)
		case map[string]any:
			for k, e := range x {
				if strings.IndexByte(k, 0) >= 0 || walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

func columnTypes(cols []Column) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.Name + " " + string(c.Type))
	}
	return b.String()
}

// FuzzKind checks type inference value by value: the type Kind gives a value accepts it, and
// so does the type Widen makes of two values' kinds (a column holding both).
func FuzzKind(f *testing.F) {
	for _, s := range [][2]string{
		{"42", "x"}, {"0123", "7"}, {"+15557624039", "-0"}, {"1e5", "9223372036854775808"}, {"2024-02-29", "2024-02-29T23:59:59.5+05:30"},
		{"2023-02-29", "0000-01-01"}, {"123e4567-e89b-12d3-a456-426614174000", "true"}, {"yes", "1"}, {"-.5", "5."},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if len(a) > 256 || len(b) > 256 {
			t.Skip()
		}
		textOK := func(v string) bool { return v != "" && utf8.ValidString(v) && strings.IndexByte(v, 0) < 0 }
		for _, v := range []string{a, b} {
			if !textOK(v) {
				continue
			}
			k := Kind(v)
			if _, _, err := (Column{Type: k}).Text(v); err != nil {
				t.Fatalf("Kind(%q) = %s, which refuses it: %v", v, k, err)
			}
		}
		if !textOK(a) || !textOK(b) {
			return
		}
		w := Widen(Kind(a), Kind(b))
		for _, v := range []string{a, b} {
			if _, _, err := (Column{Type: w}).Text(v); err != nil {
				t.Fatalf("Widen(%s, %s) = %s refuses %q: %v", Kind(a), Kind(b), w, v, err)
			}
		}
	})
}
