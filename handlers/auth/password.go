package auth

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/trustelem/zxcvbn"
	"github.com/trustelem/zxcvbn/frequency"
	"golang.org/x/crypto/bcrypt"
)

// Passwords hashes and checks passwords with bcrypt.
type Passwords struct {
	Cost  int
	dummy []byte
}

// NewPasswords returns a hasher of the given bcrypt cost.
func NewPasswords(cost int) *Passwords {
	dummy, _ := bcrypt.GenerateFromPassword([]byte("not a password"), cost)
	return &Passwords{Cost: cost, dummy: dummy}
}

// Hash returns the bcrypt hash of pw.
func (p *Passwords) Hash(pw string) (string, error) {
	if len(pw) > 72 {
		// bcrypt ignores bytes past 72; refuse rather than silently truncate.
		return "", errors.New("password longer than 72 bytes")
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), p.Cost)
	return string(h), err
}

// Check reports whether pw matches hash. With an empty hash (unknown user, or no password
// set) it still spends the time of a comparison so that timing does not reveal which emails
// have accounts.
func (p *Passwords) Check(hash, pw string) bool {
	if hash == "" {
		_ = bcrypt.CompareHashAndPassword(p.dummy, []byte(pw))
		return false
	}
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(pw)) == nil
}

// The rule for a new password (every place one is set calls WeakPassword), after NIST SP
// 800-63B (5.1.1.2): at least MinPasswordLength characters, no composition rules, and
// refused when it is one of the passwords most commonly used (the 30,000 of zxcvbn's list,
// drawn from leaked password sets), when it is made of the account's own email or name or of
// the service's name, or when the zxcvbn estimate of the guesses it takes is under
// MinPasswordGuesses (a common word with a digit, a keyboard row, a date, a repetition).
const (
	MinPasswordLength  = 8
	MinPasswordGuesses = 1e8 // zxcvbn's score 3: "safely unguessable", even offline against a fast hash
)

// commonPasswords is zxcvbn's list of the most commonly used passwords, lower case.
var commonPasswords = sync.OnceValue(func() map[string]bool {
	m := make(map[string]bool, len(frequency.FrequencyLists["passwords"]))
	for _, p := range frequency.FrequencyLists["passwords"] {
		m[p] = true
	}
	return m
})

// passwordAdvice ends every refusal: what makes a password pass.
const passwordAdvice = ": choose a longer one that is not about you, such as several unrelated words, or let a password manager generate it"

// WeakPassword says why pw may not be set as a password ("" when it may): a detail code
// (too_short, common_password, weak_password) and a sentence for the user. personal are
// words of the account (its email address, its name) that the password must not be made of.
func WeakPassword(pw string, personal ...string) (code, reason string) {
	if utf8.RuneCountInString(pw) < MinPasswordLength {
		return "too_short", fmt.Sprintf("the password must have at least %d characters", MinPasswordLength)
	}
	lower := strings.ToLower(pw)
	if commonPasswords()[lower] || commonPasswords()[strings.TrimSpace(lower)] {
		return "common_password", "this is one of the most commonly used passwords, which attackers try first" + passwordAdvice
	}
	inputs := []string{"dataplatform", "data platform"}
	for _, p := range personal {
		p = strings.ToLower(strings.TrimSpace(p))
		if p == "" {
			continue
		}
		inputs = append(inputs, p)
		notWord := func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }
		for _, w := range strings.FieldsFunc(p, notWord) { // kim, lee, example
			if utf8.RuneCountInString(w) >= 3 {
				inputs = append(inputs, w)
			}
		}
		own, _, _ := strings.Cut(p, "@") // the name, or the email's local part
		if words := strings.FieldsFunc(own, notWord); len(words) > 1 {
			inputs = append(inputs, own, strings.Join(words, "")) // kim.lee, kimlee
		}
	}
	if slices.Contains(inputs, lower) {
		return "weak_password", "the password is your email address or name" + passwordAdvice
	}
	// zxcvbn's work grows with the length; past 100 characters the rest only adds guesses.
	est := zxcvbn.PasswordStrength(string([]rune(pw)[:min(utf8.RuneCountInString(pw), 100)]), inputs)
	if est.Guesses >= MinPasswordGuesses {
		return "", ""
	}
	// Why, as zxcvbn's own feedback says it: the longest pattern found, and the account's own
	// words wherever they are.
	hint := func(pattern, dict string) string {
		switch pattern {
		case "dictionary":
			switch dict {
			case "user_inputs":
				return "it contains your email address or name, or the service's name"
			case "passwords":
				return "it is built on a commonly used password"
			}
			return "common words and names are easy to guess, even capitalised or with digits for letters"
		case "spatial":
			return "keyboard patterns such as qwerty are easy to guess"
		case "repeat":
			return "repeated characters or words are easy to guess"
		case "sequence":
			return "sequences such as abcd or 1234 are easy to guess"
		case "date", "regex":
			return "dates and years are easy to guess"
		}
		return ""
	}
	var why []string
	longest := 0
	for _, m := range est.Sequence {
		dict := m.DictionaryName
		if m.Pattern == "dictionary" && slices.Contains(inputs, strings.ToLower(m.MatchedWord)) {
			dict = "user_inputs" // zxcvbn may name another list that holds the word too (a first name)
		}
		h := hint(m.Pattern, dict)
		if h == "" {
			continue
		}
		if n := utf8.RuneCountInString(m.Token); n > longest {
			longest = n
			if len(why) > 0 && why[0] != hint("dictionary", "user_inputs") {
				why = why[1:]
			}
			why = append([]string{h}, why...)
		}
		if dict == "user_inputs" && !slices.Contains(why, h) {
			why = append(why, h)
		}
	}
	if len(why) == 0 {
		why = []string{"it is too short for the characters it uses"}
	}
	return "weak_password", "the password is too easy to guess (" + strings.Join(why, "; ") + ")" + passwordAdvice
}
