package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"hash/crc32"
	"math/big"
	"strings"
)

// API keys look like dpk_<40 base62 characters><6 base62 characters of CRC32>: a fixed prefix
// and a checksum let secret scanners recognise them and let the service reject mistyped keys
// without a database lookup. Only the SHA-256 of a key is stored; 238 random bits need no slow
// hash.
const (
	APIKeyPrefix = "dpk_"
	keyBodyLen   = 40
	keySumLen    = 6
	base62       = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// NewAPIKey returns a fresh key.
func NewAPIKey() string {
	b := make([]byte, keyBodyLen)
	max := big.NewInt(int64(len(base62)))
	for i := range b {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			panic(err)
		}
		b[i] = base62[n.Int64()]
	}
	return APIKeyPrefix + string(b) + checksum(string(b))
}

func checksum(body string) string {
	n := crc32.ChecksumIEEE([]byte(body))
	out := make([]byte, keySumLen)
	for i := keySumLen - 1; i >= 0; i-- {
		out[i] = base62[n%62]
		n /= 62
	}
	return string(out)
}

// LooksLikeAPIKey checks prefix, length, alphabet and checksum.
func LooksLikeAPIKey(k string) bool {
	if len(k) != len(APIKeyPrefix)+keyBodyLen+keySumLen || !strings.HasPrefix(k, APIKeyPrefix) {
		return false
	}
	rest := k[len(APIKeyPrefix):]
	for i := 0; i < len(rest); i++ {
		if strings.IndexByte(base62, rest[i]) < 0 {
			return false
		}
	}
	return checksum(rest[:keyBodyLen]) == rest[keyBodyLen:]
}

// HashSecret is the stored form of a high-entropy secret (API keys, refresh tokens,
// invitation tokens).
func HashSecret(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// KeyPreview is the masked form shown in lists: prefix, first four and last four characters.
func KeyPreview(k string) string {
	if len(k) < len(APIKeyPrefix)+8 {
		return APIKeyPrefix + "****"
	}
	return k[:len(APIKeyPrefix)+4] + "..." + k[len(k)-4:]
}

// NewOpaqueToken returns a URL-safe random token of 256 bits (refresh and invitation tokens).
func NewOpaqueToken() string {
	b := make([]byte, 43)
	max := big.NewInt(62)
	for i := range b {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			panic(err)
		}
		b[i] = base62[n.Int64()]
	}
	return string(b)
}
