package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// SecretPrefix starts a Standard Webhooks signing secret: whsec_ and the key in base64.
const SecretPrefix = "whsec_"

// key is the HMAC key of a whsec_ secret.
func key(secret string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil || len(k) == 0 {
		return nil, errors.New("webhooks: a signing secret is whsec_ and base64")
	}
	return k, nil
}

// Signature is the webhook-signature header of a message: "v1," and the base64 HMAC-SHA256 of
// "id.timestamp.body" under each key, space separated (several while a rotated secret still
// signs, as the standard allows).
func Signature(id string, at time.Time, body []byte, keys ...[]byte) string {
	ts := strconv.FormatInt(at.Unix(), 10)
	sigs := make([]string, 0, len(keys))
	for _, k := range keys {
		m := hmac.New(sha256.New, k)
		m.Write([]byte(id))
		m.Write([]byte{'.'})
		m.Write([]byte(ts))
		m.Write([]byte{'.'})
		m.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	}
	return strings.Join(sigs, " ")
}
