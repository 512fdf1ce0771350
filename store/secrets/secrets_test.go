package secrets

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestSealOpenAndKeyFile(t *testing.T) {
	dir := t.TempDir()
	b, err := Load(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	sealed := b.Seal([]byte("hunter2"))
	if bytes.Contains(sealed, []byte("hunter2")) {
		t.Fatal("sealed value holds the plain text")
	}
	again, err := Load(dir, "") // the same key from the file
	if err != nil {
		t.Fatal(err)
	}
	if got, err := again.Open(sealed); err != nil || string(got) != "hunter2" {
		t.Fatalf("open: %q %v", got, err)
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := again.Open(sealed); err == nil {
		t.Fatal("a tampered value opened")
	}
	other, _ := Load(t.TempDir(), "")
	if _, err := other.Open(b.Seal([]byte("x"))); err == nil {
		t.Fatal("another key opened the value")
	}
	if _, err := Load(dir, "c2hvcnQ="); err == nil {
		t.Fatal("a short key was accepted")
	}
}
