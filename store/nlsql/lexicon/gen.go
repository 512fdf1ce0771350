//go:build ignore

// gen reduces the WordNet 3.0 database (Debian's wordnet-base: /usr/share/wordnet) to what
// the engine reads: the synonym sets of nouns, verbs and adjectives, each word kept only in
// its two most frequent senses (a rare sense would make look-alike synonyms), and the
// irregular inflections (bought → buy). Run with `go generate ./store/nlsql/lexicon/`.
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
	for _, pos := range []string{"noun", "verb", "adj"} {
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

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
