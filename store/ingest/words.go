package ingest

import (
	_ "embed"
	"fmt"
	"strings"
)

// words.txt holds the English words that say what a column is, by class.
//
//go:embed words.txt
var wordsData string

// wordClasses are words.txt's classes: each its words in order and as a set.
var wordClasses = parseWords(wordsData)

type wordClass struct {
	list []string
	set  map[string]bool
}

func parseWords(data string) map[string]wordClass {
	out := map[string]wordClass{}
	cur := ""
	for _, line := range strings.Split(data, "\n") {
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		words := line
		if line[0] != ' ' {
			name, rest, ok := strings.Cut(line, ":")
			if !ok {
				panic(fmt.Sprintf("words.txt: %q has no class", line))
			}
			cur, words = name, rest
			out[cur] = wordClass{set: map[string]bool{}}
		}
		c := out[cur]
		for _, w := range strings.Fields(words) {
			c.list = append(c.list, w)
			c.set[w] = true
		}
		out[cur] = c
	}
	return out
}

// Words are the words of a class of words.txt, as a set (an unknown class is a mistake in
// the code: it panics).
func Words(class string) map[string]bool { return wordsOf(class).set }

func wordsOf(class string) wordClass {
	c, ok := wordClasses[class]
	if !ok {
		panic("words.txt has no class " + class)
	}
	return c
}
