package auth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"sync"
	"time"

	"dataplatform/store"

	"github.com/jmoiron/sqlx"
	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
)

// KeyStore holds the RS256 keys that sign and verify access tokens. The keys live in the
// database, so every replica signs with the same key and verifies every replica's tokens. A
// retired key stays in the public set until every token it signed has expired (retain).
type KeyStore struct {
	st     *store.Store
	clock  func() time.Time
	retain time.Duration

	mu         sync.RWMutex
	signer     jwk.Key            // newest active private key
	public     map[string]jwk.Key // kid -> public key
	publicSet  jwk.Set
	lastReload time.Time
}

// errNoSigner is Reload's answer when no key is active.
var errNoSigner = errors.New("no active signing key")

// NewKeyStore loads the keys, creating the first one when there is none.
func NewKeyStore(ctx context.Context, st *store.Store, clock func() time.Time, retain time.Duration) (*KeyStore, error) {
	k := &KeyStore{st: st, clock: clock, retain: retain}
	// An RSA key takes tens of milliseconds of CPU to make: only when there is none to load.
	if err := k.Reload(ctx); !errors.Is(err, errNoSigner) {
		return k, err
	}
	if _, err := k.add(ctx, false); err != nil {
		return nil, err
	}
	return k, k.Reload(ctx)
}

// Rotate creates a new signing key and retires the current one, which keeps verifying until
// its tokens expire. It returns the new key id.
func (k *KeyStore) Rotate(ctx context.Context) (string, error) {
	kid, err := k.add(ctx, true)
	if err != nil {
		return "", err
	}
	return kid, k.Reload(ctx)
}

func (k *KeyStore) add(ctx context.Context, rotate bool) (string, error) {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return "", err
	}
	pub, _ := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	sum := sha256.Sum256(pub)
	kid := base64.RawURLEncoding.EncodeToString(sum[:12])
	key := store.SigningKey{Kid: kid, PrivatePEM: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), CreatedAt: k.clock().UTC()}
	err = k.st.Tx(ctx, func(tx *sqlx.Tx) error {
		_, err := store.AddSigningKey(ctx, tx, key, rotate)
		return err
	})
	return kid, err
}

// Reload reads the keys from the database.
func (k *KeyStore) Reload(ctx context.Context) error {
	rows, err := store.SigningKeys(ctx, k.st.DB, k.clock().Add(-k.retain))
	if err != nil {
		return err
	}
	var signer jwk.Key
	public := map[string]jwk.Key{}
	set := jwk.NewSet()
	for _, r := range rows {
		block, _ := pem.Decode([]byte(r.PrivatePEM))
		if block == nil {
			return fmt.Errorf("signing key %s: bad PEM", r.Kid)
		}
		raw, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return fmt.Errorf("signing key %s: %w", r.Kid, err)
		}
		priv, err := jwk.FromRaw(raw)
		if err != nil {
			return err
		}
		for _, kv := range [][2]any{{jwk.KeyIDKey, r.Kid}, {jwk.AlgorithmKey, jwa.RS256}, {jwk.KeyUsageKey, "sig"}} {
			if err := priv.Set(kv[0].(string), kv[1]); err != nil {
				return err
			}
		}
		pub, err := priv.PublicKey()
		if err != nil {
			return err
		}
		public[r.Kid] = pub
		if err := set.AddKey(pub); err != nil {
			return err
		}
		if signer == nil && r.RetiredAt == nil {
			signer = priv
		}
	}
	if signer == nil {
		return errNoSigner
	}
	k.mu.Lock()
	k.signer, k.public, k.publicSet, k.lastReload = signer, public, set, time.Now()
	k.mu.Unlock()
	return nil
}

// Signer is the key new tokens are signed with.
func (k *KeyStore) Signer() jwk.Key {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.signer
}

// PublicSet is the JWKS published at /.well-known/jwks.json.
func (k *KeyStore) PublicSet() jwk.Set {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.publicSet
}

// Lookup returns the public key kid. An unknown kid triggers a reload (at most every ten
// seconds), so a key rotated in by another replica is picked up.
func (k *KeyStore) Lookup(ctx context.Context, kid string) (jwk.Key, bool) {
	k.mu.RLock()
	key, ok := k.public[kid]
	stale := time.Since(k.lastReload) > 10*time.Second
	k.mu.RUnlock()
	if ok || !stale {
		return key, ok
	}
	if err := k.Reload(ctx); err != nil {
		return nil, false
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	key, ok = k.public[kid]
	return key, ok
}
