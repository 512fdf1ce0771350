package tests

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// requireTLS gives the cluster a self-signed certificate and lets TCP clients in only over
// TLS (hostssl), so a connection that does not use TLS is refused by the server itself.
func requireTLS(t *testing.T, superuserURL, dataDir string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	files := map[string][]byte{
		"server.crt":  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"server.key":  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		"pg_hba.conf": []byte("local all all scram-sha-256\nhostssl all all 127.0.0.1/32 scram-sha-256\nhostssl all all ::1/128 scram-sha-256\n"),
	}
	// The server reads the key only when its own user owns it (the cluster runs as postgres
	// when the tests run as root).
	uid, gid := -1, -1
	if os.Getuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatal(err)
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
	}
	for name, b := range files {
		p := filepath.Join(dataDir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if uid >= 0 {
			if err := os.Chown(p, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
	}
	db, err := sql.Open("postgres", superuserURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{`ALTER SYSTEM SET ssl = on`, `SELECT pg_reload_conf()`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	// The reload is asynchronous: wait until the server answers TLS.
	tlsURL := strings.Replace(superuserURL, "sslmode=disable", "sslmode=require", 1)
	for i := 0; ; i++ {
		tdb, _ := sql.Open("postgres", tlsURL)
		var on bool
		err := tdb.QueryRow(`SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()`).Scan(&on)
		tdb.Close()
		if err == nil && on {
			return
		}
		if i == 100 {
			t.Fatalf("the cluster did not turn TLS on: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPostgresConnectionSSLModes: ssl_mode reaches both the connection test and the foreign
// server. Against a server that accepts only TLS, disable is refused, require connects
// without verifying, verify-full rejects the self-signed certificate, and a dataset created
// with require reads its rows live over TLS.
func TestPostgresConnectionSSLModes(t *testing.T) {
	t.Parallel()
	c, dataDir := externalShop(t)
	requireTLS(t, c.URL("postgres"), dataDir)
	u, _ := url.Parse(c.URL("shop"))
	password, _ := u.User.Password()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	base := "/api/v1/projects/" + e.projectID + "/datasets/"
	conn := func(mode string) map[string]any {
		return map[string]any{"type": "postgresql", "host": "127.0.0.1", "port": c.Port, "database": "shop", "username": "postgres",
			"password": password, "ssl_mode": mode}
	}
	for _, tc := range []struct {
		mode, fails string // fails: part of the reason, empty when the test succeeds
	}{
		{"disable", "no encryption"},
		{"allow", ""},
		{"prefer", ""},
		{"require", ""},
		{"verify-ca", "certificate"},
		{"verify-full", "certificate"},
	} {
		r := e.do("POST", base+"database/test", map[string]any{"connection": conn(tc.mode)}, own).status(200)
		if tc.fails == "" && (r.get("success") != true || r.num("details.table_count") != 3) ||
			tc.fails != "" && (r.get("success") != false || !strings.Contains(r.str("message"), tc.fails)) {
			t.Fatalf("ssl_mode %s: %s", tc.mode, r.Body)
		}
	}
	e.do("POST", base+"database", map[string]any{"name": "Plain", "connection": conn("disable")}, own).apiError(400, "CONNECTION_FAILED")
	id := e.do("POST", base+"database", map[string]any{"name": "Shop", "connection": conn("require")}, own).status(202).str("id")
	if d := e.waitDataset(e.ownerToken, id); d.str("status") != "active" || d.str("source.connection.ssl_mode") != "require" {
		t.Fatalf("dataset over TLS: %s", d.Body)
	}
	r := e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+id+"/preview?table=customers", nil, own).status(200)
	if !strings.Contains(string(r.Body), "ann@example.com") {
		t.Fatalf("preview over TLS: %s", r.Body)
	}
}
