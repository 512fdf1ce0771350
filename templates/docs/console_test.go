package docs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// TestConsoleBundleCurrent: the committed CodeMirror bundle was built from the lock file and
// entry file as they are now (scripts/console-assets.sh writes their digest on its first line),
// so the binary never embeds code other than what the lock file pins.
func TestConsoleBundleCurrent(t *testing.T) {
	var in []byte
	for _, f := range []string{"package-lock.json", "codemirror-entry.js"} {
		b, err := os.ReadFile("../../scripts/tools/console/" + f)
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, b...)
	}
	sum := sha256.Sum256(in)
	bundle, err := files.ReadFile("thirdparty/codemirror.js")
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := bytes.Cut(bundle, []byte("\n"))
	if want := "sha256:" + hex.EncodeToString(sum[:]) + " "; !strings.Contains(string(first), want) {
		t.Fatalf("templates/docs/thirdparty/codemirror.js is not built from scripts/tools/console as it is now: run scripts/console-assets.sh (its header: %.200s)", first)
	}
}

// TestConsoleAssetsServed: the console's modules are served by their bare names, like the
// other pages' files, and none of its names shadows another's.
func TestConsoleAssetsServed(t *testing.T) {
	entries, err := files.ReadDir("console")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		n := e.Name()
		if strings.HasSuffix(n, ".html.tmpl") {
			continue
		}
		if !Exists(n) || assetPath(n) != "console/"+n {
			t.Errorf("%s is not served from console/", n)
		}
		if _, err := files.ReadFile(n); err == nil {
			t.Errorf("%s is both a page file and a console file", n)
		}
		if _, err := files.ReadFile("thirdparty/" + n); err == nil {
			t.Errorf("%s is both a third-party file and a console file", n)
		}
	}
	if !Exists("codemirror.js") {
		t.Error("codemirror.js is not served")
	}
}
