package auth

import (
	"hash/crc32"
	"strings"

	"dataplatform/store/secrets"
)

// API keys look like dpk_<40 base62 characters><6 base62 characters of CRC32>: a fixed prefix
// and a checksum let secret scanners recognise them and let the service reject mistyped keys
// without a database lookup. Only its hash (secrets.Hash) is stored.
const (
	APIKeyPrefix = "dpk_"
	keyBodyLen   = 40
	keySumLen    = 6
	base62       = secrets.Base62
)

// NewAPIKey returns a fresh key.
func NewAPIKey() string {
	b := secrets.Random(keyBodyLen)
	return APIKeyPrefix + b + checksum(b)
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

// KeyPreview is the masked form shown in lists: prefix, first four and last four characters.
func KeyPreview(k string) string {
	if len(k) < len(APIKeyPrefix)+8 {
		return APIKeyPrefix + "****"
	}
	return k[:len(APIKeyPrefix)+4] + "..." + k[len(k)-4:]
}
