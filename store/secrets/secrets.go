// Package secrets encrypts the credentials the platform keeps (a connected database's
// password) with AES-256-GCM under a key that never enters the database: DP_SECRET_KEY, or a
// key file created under the data directory on first use.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Box seals and opens secrets.
type Box struct {
	aead    cipher.AEAD
	signKey []byte
}

// KeyFile is the key's file under the data directory when DP_SECRET_KEY is not set.
const KeyFile = "secret.key"

// Load builds the box from key (base64 of 32 bytes) or, when key is empty, from the key file
// in dataDir, creating it (mode 0600) the first time. Several replicas must share one key:
// set DP_SECRET_KEY on each.
func Load(dataDir, key string) (*Box, error) {
	if key == "" {
		path := filepath.Join(dataDir, KeyFile)
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			raw := make([]byte, 32)
			if _, err := rand.Read(raw); err != nil {
				return nil, err
			}
			b = []byte(base64.StdEncoding.EncodeToString(raw))
			if err := os.MkdirAll(dataDir, 0o711); err != nil {
				return nil, err
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				return nil, err
			}
		} else if err != nil {
			return nil, err
		}
		key = string(b)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(key))
	if err != nil || len(raw) != 32 {
		return nil, fmt.Errorf("the secret key must be 32 bytes in base64 (openssl rand -base64 32)")
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, raw)
	mac.Write([]byte("dataplatform signing key"))
	return &Box{aead: aead, signKey: mac.Sum(nil)}, nil
}

// Sign is an HMAC-SHA256 of data under a key derived from the secret key (signed links):
// every replica sharing the key signs alike.
func (b *Box) Sign(data string) []byte {
	mac := hmac.New(sha256.New, b.signKey)
	mac.Write([]byte(data))
	return mac.Sum(nil)
}

// Seal encrypts plain: a random nonce followed by the ciphertext.
func (b *Box) Seal(plain []byte) []byte {
	nonce := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(plain)+b.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return b.aead.Seal(nonce, nonce, plain, nil)
}

// Open decrypts what Seal made.
func (b *Box) Open(sealed []byte) ([]byte, error) {
	n := b.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("secrets: sealed value too short")
	}
	return b.aead.Open(nil, sealed[:n], sealed[n:], nil)
}
