package secrets

import (
	"crypto/rand"
	"crypto/sha256"
	"math/big"
)

// The opaque secrets the service hands out (API keys, refresh and invitation tokens, browser
// sessions, OAuth states, verification codes) are random base62 strings; only their SHA-256
// is stored: with 238 or more random bits, a slow hash adds nothing.

// Base62 is the alphabet of opaque secrets.
const Base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// Random returns n random Base62 characters.
func Random(n int) string {
	b := make([]byte, n)
	max := big.NewInt(int64(len(Base62)))
	for i := range b {
		k, err := rand.Int(rand.Reader, max)
		if err != nil {
			panic(err)
		}
		b[i] = Base62[k.Int64()]
	}
	return string(b)
}

// NewToken returns a URL-safe random token of 256 bits.
func NewToken() string { return Random(43) }

// Hash is the stored form of an opaque secret.
func Hash(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}
