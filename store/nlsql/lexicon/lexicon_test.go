package lexicon

import (
	"strings"
	"testing"
)

func TestLexicon(t *testing.T) {
	for _, p := range [][2]string{{"client", "customer"}, {"physician", "doctor"}, {"pay", "salary"}} {
		if !Synonyms(p[0], p[1]) || !Synonyms(p[1], p[0]) {
			t.Errorf("%s and %s: want synonyms", p[0], p[1])
		}
	}
	for _, p := range [][2]string{{"price", "doctor"}, {"order", "customer"}, {"client", "client"}} {
		if Synonyms(p[0], p[1]) {
			t.Errorf("%s and %s: want no synonyms", p[0], p[1])
		}
	}
	if Base("bought") != "buy" || Base("born") != "bear" || Base("table") != "table" {
		t.Errorf("irregular forms: %s %s %s", Base("bought"), Base("born"), Base("table"))
	}
	if !Antonyms("indoor", "outdoor") || !Antonyms("outdoor", "indoor") || !Antonyms("active", "inactive") || Antonyms("indoor", "active") {
		t.Errorf("antonyms: indoor/outdoor %v, active/inactive %v, indoor/active %v", Antonyms("indoor", "outdoor"), Antonyms("active", "inactive"), Antonyms("indoor", "active"))
	}
	if Stem("shipping") != Stem("ship") || Stem("payments") != Stem("payment") {
		t.Errorf("stems: %s %s", Stem("shipping"), Stem("payments"))
	}
}

// TestClasses: every line of classes.txt is a comment or a class with words, and a word the
// engine reads as a unit's price is not also one of a whole row's value.
func TestClasses(t *testing.T) {
	for _, line := range strings.Split(classData, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, words, ok := strings.Cut(line, ":")
		if !ok || len(strings.Fields(words)) == 0 || len(Class(name)) == 0 {
			t.Errorf("classes.txt: %q is no class with words", line)
		}
	}
	for w := range Class("unit-price") {
		if Class("whole-value")[w] {
			t.Errorf("%q is a unit's price and a whole row's value", w)
		}
	}
}
