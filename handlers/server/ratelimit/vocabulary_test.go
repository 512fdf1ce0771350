package ratelimit

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"dataplatform/templates/specgen"
)

// TestCategoriesAgree: the rate-limit categories and their default figures are written in
// Defaults, and copied where readers look: every x-rate-limit category of the descriptions
// is one of Defaults (or none), the record API's figures in its descriptions are Defaults',
// and the platform description's list names every other category with its figure.
func TestCategoriesAgree(t *testing.T) {
	files, _ := filepath.Glob("../../../openapi/*.yaml")
	files = append(files, "../../../templates/specgen/dataset.openapi.yaml.tmpl")
	used := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`x-rate-limit: \{category: ([a-z_]+)`).FindAllStringSubmatch(string(b), -1) {
			used[m[1]] = true
			if _, ok := Defaults[m[1]]; !ok && m[1] != "none" {
				t.Errorf("%s: category %s has no default limit", f, m[1])
			}
		}
	}
	if len(used) < 10 {
		t.Fatalf("found %d categories in the descriptions: the pattern no longer matches", len(used))
	}
	units := map[string]string{"S": "a second", "M": "a minute", "H": "an hour", "D": "a day"}
	system, err := os.ReadFile("../../../openapi/system.yaml")
	if err != nil {
		t.Fatal(err)
	}
	prose := strings.Join(strings.Fields(string(system)), " ")
	for cat, def := range Defaults {
		n, unit, _ := strings.Cut(def, "-")
		if word, ok := strings.CutPrefix(cat, "records_"); ok {
			if got, want := specgen.RecordRateLimits[word], n+"/min"; unit != "M" || got != want {
				t.Errorf("%s: the dataset descriptions say %q, the limiter %s", cat, got, def)
			}
			continue
		}
		if want := "`" + cat + "` " + n + " " + units[unit]; !strings.Contains(prose, want) {
			t.Errorf("openapi/system.yaml does not list %q", want)
		}
	}
	if len(specgen.RecordRateLimits) != 6 {
		t.Errorf("the dataset descriptions state %d record categories", len(specgen.RecordRateLimits))
	}
}
