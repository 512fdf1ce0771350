package ingest

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// writeTemp writes content to a file in the test's temporary directory.
func writeTemp(t testing.TB, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// openInferred opens a file as the dataset loader does: Infer (over the first limit records;
// all of them when limit is 0), then OpenSchema with the inferred schema.
func openInferred(path string, f Format, limit int64) (*Schema, *Reader, error) {
	s, err := InferSample(path, f, limit)
	if err != nil {
		return nil, nil, err
	}
	r, err := OpenSchema(path, s)
	if err != nil {
		return nil, nil, err
	}
	return s, r, nil
}

// readAll opens a file with its inferred schema and returns its columns and records (values
// copied out).
func readAll(t testing.TB, path string, f Format) ([]Column, [][]Value) {
	t.Helper()
	s, r, err := openInferred(path, f, 0)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer r.Close()
	var rows [][]Value
	for {
		row, err := r.Next()
		if err == io.EOF {
			return s.Columns, rows
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		rows = append(rows, append([]Value(nil), row...))
	}
}

// readErr opens a file with the schema inferred from its first record only, so that the
// reader (not inference) meets the rest of the file, reads it to the end and returns the
// first error that is not io.EOF.
func readErr(path string, f Format) error {
	_, r, err := openInferred(path, f, 1)
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		if _, err := r.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// infer runs Infer and fails the test on error.
func infer(t testing.TB, path string, f Format) *Schema {
	t.Helper()
	s, err := Infer(path, f)
	if err != nil {
		t.Fatalf("Infer: %v", err)
	}
	return s
}

// types lists the columns as name:type, with ? for nullable.
func types(cols []Column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Name + ":" + string(c.Type)
		if c.Nullable {
			out[i] += "?"
		}
	}
	return out
}
