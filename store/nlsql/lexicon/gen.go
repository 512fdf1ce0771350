//go:build ignore

// gen reduces the WordNet 3.0 database (Debian's wordnet-base: /usr/share/wordnet) to what
// the engine reads: the synonym sets of nouns, verbs and adjectives, each word kept only in
// its two most frequent senses (a rare sense would make look-alike synonyms), and the
// irregular inflections (bought → buy), and the antonyms between those senses (indoor ↔
// outdoor: WordNet's lexical "!" pointers). Run with `go generate ./store/nlsql/lexicon/`.
package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

const senses = 2

var word = regexp.MustCompile(`^[a-z]+(_[a-z]+)?$`)

func main() {
	dir := "/usr/share/wordnet"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	out, err := os.Create("wordnet.txt")
	check(err)
	defer out.Close()
	w := bufio.NewWriter(out)
	defer w.Flush()
	fmt.Fprintln(w, "# WordNet 3.0 (Princeton University), reduced: see LICENSE.WordNet and gen.go")
	kept := map[string]map[string]bool{} // pos → "lemma offset" of the senses kept
	for _, pos := range []string{"noun", "verb", "adj"} {
		kept[pos] = map[string]bool{}
		sets := map[string][]string{} // synset offset → lemmas
		f, err := os.Open(filepath.Join(dir, "index."+pos))
		check(err)
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, " ") {
				continue // the license header
			}
			fs := strings.Fields(line)
			n, err := strconv.Atoi(fs[2])
			if err != nil || !word.MatchString(fs[0]) {
				continue
			}
			offs := fs[len(fs)-n:]
			for _, o := range offs[:min(senses, len(offs))] {
				sets[o] = append(sets[o], fs[0])
				kept[pos][fs[0]+" "+o] = true
			}
		}
		check(sc.Err())
		f.Close()
		var lines []string
		for _, ls := range sets {
			if len(ls) > 1 {
				slices.Sort(ls)
				lines = append(lines, strings.Join(ls, " "))
			}
		}
		slices.Sort(lines)
		lines = slices.Compact(lines)
		for _, l := range lines {
			fmt.Fprintf(w, "%s %s\n", pos[:1], l)
		}
	}
	for _, pos := range []string{"noun", "verb", "adj"} {
		for _, l := range antonyms(dir, pos, kept[pos]) {
			fmt.Fprintf(w, "! %s\n", l)
		}
	}
	for _, pos := range []string{"noun", "verb", "adj"} {
		f, err := os.Open(filepath.Join(dir, pos+".exc"))
		check(err)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) == 2 && word.MatchString(fs[0]) && word.MatchString(fs[1]) {
				fmt.Fprintf(w, "x %s %s\n", fs[0], fs[1])
			}
		}
		check(sc.Err())
		f.Close()
	}
}

// antonyms are the pairs "a b" (a before b) of words in kept senses that WordNet's data file
// of pos says are opposites (lexical "!" pointers: indoor ↔ outdoor).
func antonyms(dir, pos string, kept map[string]bool) []string {
	type ref struct {
		off string
		n   int // the word's number in its synset, from 1
	}
	lemmas := map[string][]string{} // synset offset → its words, in order
	type pointer struct {
		from ref
		to   ref
	}
	var ptrs []pointer
	f, err := os.Open(filepath.Join(dir, "data."+pos))
	check(err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, " ") {
			continue // the license header
		}
		fs := strings.Fields(line)
		off := fs[0]
		n, err := strconv.ParseInt(fs[3], 16, 32)
		check(err)
		var ws []string
		for i := 0; i < int(n); i++ {
			lw := strings.ToLower(fs[4+2*i])
			if k := strings.IndexByte(lw, '('); k >= 0 {
				lw = lw[:k] // "outdoor(a)": an adjective's position
			}
			ws = append(ws, lw)
		}
		lemmas[off] = ws
		at := 4 + 2*int(n)
		np, err := strconv.Atoi(fs[at])
		check(err)
		for i := 0; i < np; i++ {
			sym, to, st := fs[at+1+4*i], fs[at+2+4*i], fs[at+4+4*i]
			if sym != "!" {
				continue
			}
			src, err1 := strconv.ParseInt(st[:2], 16, 32)
			dst, err2 := strconv.ParseInt(st[2:], 16, 32)
			if err1 != nil || err2 != nil || src == 0 || dst == 0 {
				continue
			}
			ptrs = append(ptrs, pointer{ref{off, int(src)}, ref{to, int(dst)}})
		}
	}
	check(sc.Err())
	var out []string
	for _, p := range ptrs {
		a, b := lemmas[p.from.off], lemmas[p.to.off]
		if p.from.n > len(a) || p.to.n > len(b) {
			continue
		}
		x, y := a[p.from.n-1], b[p.to.n-1]
		if !word.MatchString(x) || !word.MatchString(y) || !kept[x+" "+p.from.off] || !kept[y+" "+p.to.off] {
			continue
		}
		if y < x {
			x, y = y, x
		}
		out = append(out, x+" "+y)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
