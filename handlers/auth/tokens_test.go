package auth

import (
	"context"
	"errors"
	"testing"
	"time"

	"dataplatform/handlers/apierr"
	"dataplatform/store"
	"dataplatform/store/pgtest"
	"dataplatform/store/roles"
)

func newTokens(t testing.TB) *Tokens {
	ctx := context.Background()
	st, err := store.Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ks, err := NewKeyStore(ctx, st, time.Now, time.Hour+ClockSkew)
	if err != nil {
		t.Fatal(err)
	}
	return &Tokens{Keys: ks, Issuer: "http://dp.test", TTL: time.Hour, Clock: time.Now}
}

// A rotated-out key keeps verifying the tokens it signed; new tokens use the new key.
func TestKeyRotationKeepsOldTokensValid(t *testing.T) {
	tk := newTokens(t)
	ctx := context.Background()
	old, err := tk.Issue(&AccessClaims{UserID: "usr_a", Email: "a@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	oldKid := tk.Keys.Signer().KeyID()
	if _, err := tk.Keys.Rotate(ctx); err != nil {
		t.Fatal(err)
	}
	if tk.Keys.Signer().KeyID() == oldKid {
		t.Fatal("rotation kept the signing key")
	}
	if _, err := tk.verify(ctx, old); err != nil {
		t.Fatalf("token of the retired key: %v", err)
	}
	if tk.Keys.PublicSet().Len() != 2 {
		t.Fatalf("JWKS should publish both keys, has %d", tk.Keys.PublicSet().Len())
	}
	fresh, _ := tk.Issue(&AccessClaims{UserID: "usr_a"})
	if _, err := tk.verify(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	// Once the retired key's tokens have all expired it leaves the set.
	tk.Keys.clock = func() time.Time { return time.Now().Add(2 * time.Hour) }
	if err := tk.Keys.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if tk.Keys.PublicSet().Len() != 1 {
		t.Fatalf("retired key still published after its tokens expired")
	}
}

// The cache of verified tokens still enforces expiry.
func TestVerifiedCacheHonoursExpiry(t *testing.T) {
	tk := newTokens(t)
	ctx := context.Background()
	now := time.Now()
	tk.Clock = func() time.Time { return now }
	tok, _ := tk.Issue(&AccessClaims{UserID: "usr_a"})
	if _, err := tk.Verify(ctx, tok); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour + ClockSkew + time.Second)
	_, err := tk.Verify(ctx, tok)
	var ae *apierr.Error
	if !errors.As(err, &ae) || ae.Code != "TOKEN_EXPIRED" {
		t.Fatalf("cached token after expiry: %v", err)
	}
}

// ClockSkew applies to iat and nbf only: a token from a clock a little ahead is usable at once,
// and every token ends at its exp, whether verified before (cached) or not.
func TestSkewNotOnExpiry(t *testing.T) {
	tk := newTokens(t)
	ctx := context.Background()
	now := time.Now()
	tk.Clock = func() time.Time { return now }
	tok, _ := tk.Issue(&AccessClaims{UserID: "usr_a"})
	fresh := &Tokens{Keys: tk.Keys, Issuer: tk.Issuer, TTL: tk.TTL, Clock: tk.Clock}
	now = now.Add(-ClockSkew + time.Second) // issued "in the future", within the allowance
	if _, err := tk.Verify(ctx, tok); err != nil {
		t.Fatalf("iat within the skew: %v", err)
	}
	now = now.Add(ClockSkew - time.Second + time.Hour) // at exp
	for name, v := range map[string]*Tokens{"cached": tk, "uncached": fresh} {
		_, err := v.Verify(ctx, tok)
		var ae *apierr.Error
		if !errors.As(err, &ae) || ae.Code != "TOKEN_EXPIRED" {
			t.Fatalf("%s token at exp: %v", name, err)
		}
	}
}

// BenchmarkVerifyUncached is the full verification a token gets the first time it is seen:
// header checks, RS256 signature, claim validation.
func BenchmarkVerifyUncached(b *testing.B) {
	tk := newTokens(b)
	ctx := context.Background()
	tok, _ := tk.Issue(&AccessClaims{UserID: "usr_a", Email: "a@example.com", Org: "org_a", Roles: []string{"owner"}, Permissions: roles.Permissions("owner")})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tk.verify(ctx, tok); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerify is what a request pays for a token it has sent before.
func BenchmarkVerify(b *testing.B) {
	tk := newTokens(b)
	ctx := context.Background()
	tok, _ := tk.Issue(&AccessClaims{UserID: "usr_a"})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tk.Verify(ctx, tok); err != nil {
			b.Fatal(err)
		}
	}
}
