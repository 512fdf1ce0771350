package auth

import (
	"errors"

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
