// Package lexicon holds the English words the natural-language engine knows beyond the
// names in a project's schemas: synonym sets and irregular inflections from WordNet 3.0
// (reduced by gen.go into wordnet.txt; WordNet's license is in LICENSE.WordNet), the
// opposites between those senses (indoor ↔ outdoor), and the Snowball (Porter2) stemmer
// for regular inflections ("shipping", "shipped" → ship).
package lexicon

//go:generate go run gen.go

import (
	_ "embed"
	"strings"
	"sync"

	"github.com/kljensen/snowball/english"
)

//go:embed wordnet.txt
var data string

//go:embed classes.txt
var classData string

// classes are classes.txt's word classes.
var classes = func() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, line := range strings.Split(classData, "\n") {
		name, words, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		out[name] = map[string]bool{}
		for _, w := range strings.Fields(words) {
			out[name][w] = true
		}
	}
	return out
}()

// Class is the set of words of a class of classes.txt (an unknown class is a mistake in the
// code: it panics).
func Class(name string) map[string]bool {
	c, ok := classes[name]
	if !ok {
		panic("classes.txt has no class " + name)
	}
	return c
}

var (
	once   sync.Once
	sets   [][]string          // synonym sets, words with _ for spaces
	member map[string][]int32  // word → the sets it is in
	base   map[string]string   // irregular form → base form (bought → buy)
	anto   map[string][]string // word → its antonyms (indoor → outdoor)
)

func load() {
	member = map[string][]int32{}
	base = map[string]string{}
	anto = map[string][]string{}
	for _, line := range strings.Split(data, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		fs := strings.Fields(line)
		if fs[0] == "!" {
			if len(fs) == 3 {
				anto[fs[1]] = append(anto[fs[1]], fs[2])
				anto[fs[2]] = append(anto[fs[2]], fs[1])
			}
			continue
		}
		if fs[0] == "x" {
			if len(fs) == 3 {
				base[fs[1]] = fs[2]
			}
			continue
		}
		id := int32(len(sets))
		sets = append(sets, fs[1:])
		for _, w := range fs[1:] {
			member[w] = append(member[w], id)
		}
	}
}

// Base is the base form of an irregular inflection ("bought" → "buy", "born" → "bear"), or w.
func Base(w string) string {
	once.Do(load)
	if b, ok := base[w]; ok {
		return b
	}
	return w
}

// Synonyms reports whether words a and b (a name's words joined by _) share a sense among
// the frequent senses of each: "client" and "customer", "physician" and "doctor".
func Synonyms(a, b string) bool {
	once.Do(load)
	if a == b {
		return false
	}
	for _, i := range member[a] {
		for _, j := range member[b] {
			if i == j {
				return true
			}
		}
	}
	return false
}

// Antonyms reports whether words a and b are opposites in WordNet's frequent senses of each:
// "indoor" and "outdoor", "active" and "inactive".
func Antonyms(a, b string) bool {
	once.Do(load)
	for _, x := range anto[a] {
		if x == b {
			return true
		}
	}
	return false
}

// Stem is the Porter2 stem of a lower-case word.
func Stem(w string) string { return english.Stem(w, false) }
