package tests

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"dataplatform/cmd/dataplatform/config"

	"github.com/jmoiron/sqlx"
)

// The record API keeps each dataset-and-membership lookup in memory until datasets or
// memberships change: a change made through this server is seen by the very next request; one
// made anywhere else (another replica, a job, SQL) as soon as PostgreSQL's notification arrives.
func TestRecordAccessFollowsChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.uploadAndCreate(e.ownerToken, "Items", "items.csv", "name,qty\na,1\nb,2\n")
	e.waitDataset(e.ownerToken, id)
	inv := e.do("POST", "/api/v1/organizations/"+e.orgID+"/invitations", map[string]any{"email": "cache@example.com", "role": "developer"}, own).status(201)
	uid := inv.str("user_id")
	acc := e.do("POST", "/api/v1/invitations/"+invTokenOf(inv)+"/accept", map[string]any{"name": "C", "password": "quiet harbor lantern"}).status(200)
	ed := bearer(acc.str("access_token"))
	data := "/api/v1/datasets/" + id + "/data"
	e.do("GET", data, nil, ed).status(200)
	e.do("POST", data, map[string]any{"name": "c", "qty": 3}, ed).status(201)

	// A change that tells no one (triggers off for this transaction) is not seen: the
	// lookup is answered from memory...
	quiet := func(sql string, args ...any) {
		t.Helper()
		err := e.st.Tx(context.Background(), func(tx *sqlx.Tx) error {
			if _, err := tx.Exec(`SET LOCAL session_replication_role = replica`); err != nil {
				return err
			}
			_, err := tx.Exec(sql, args...)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	quiet(`UPDATE platform.memberships SET role = 'analyst' WHERE user_id = $1`, uid)
	e.do("POST", data, map[string]any{"name": "d", "qty": 4}, ed).status(201)
	// ...until this server makes a control-plane change itself (here one no trigger sees):
	// then at once.
	e.do("PATCH", "/api/v1/projects/"+e.projectID, map[string]any{"description": "things"}, own).status(200)
	e.do("POST", data, map[string]any{"name": "e", "qty": 5}, ed).authError(403, "PERMISSION_DENIED")

	// A change made elsewhere arrives as a notification.
	if _, err := e.st.DB.Exec(`UPDATE platform.memberships SET role = 'developer' WHERE user_id = $1`, uid); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		r := e.do("POST", data, map[string]any{"name": "f", "qty": 6}, ed)
		if r.Code == 201 {
			break
		}
		if r.Code != 403 || i == 1000 {
			t.Fatalf("after the role went back to developer elsewhere: %d %s", r.Code, r.Body)
		}
		time.Sleep(5 * time.Millisecond)
	}

	// Through this server: a role change, a removal, a dataset's deletion, each seen at once.
	e.do("PATCH", "/api/v1/organizations/"+e.orgID+"/users/"+uid, map[string]any{"role": "analyst"}, own).status(200)
	e.do("POST", data, map[string]any{"name": "g", "qty": 7}, ed).authError(403, "PERMISSION_DENIED")
	e.do("GET", data, nil, ed).status(200)
	e.do("DELETE", "/api/v1/organizations/"+e.orgID+"/users/"+uid, nil, own).status(204)
	e.do("GET", data, nil, ed).apiError(404, "DATASET_NOT_FOUND")
	e.do("GET", data, nil, own).status(200)
	e.do("DELETE", "/api/v1/projects/"+e.projectID+"/datasets/"+id, nil, own).status(200)
	e.do("GET", data, nil, own).apiError(404, "DATASET_NOT_FOUND")

}

// Record API requests take one of DP_RECORD_CONCURRENCY slots before they reach the database;
// the others wait for one (exports, change streams and /data/query do not), and a request whose client
// gives up waiting ends quietly: no error logged.
func TestRecordAdmission(t *testing.T) {
	// Serial: it tells a waiting request from a served one by a 300 ms client timeout.
	e := newEnv(t, func(c *config.Config) { c.RecordConcurrency = 1 })
	id := e.uploadAndCreate(e.ownerToken, "Items", "items.csv", "name,qty\na,1\nb,2\n")
	e.waitDataset(e.ownerToken, id)
	data := "/api/v1/datasets/" + id + "/data"
	get := func(path string, wait time.Duration) error {
		req, _ := http.NewRequest("GET", e.ts.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+e.ownerToken)
		r, err := (&http.Client{Timeout: wait}).Do(req)
		if err == nil {
			_, err = io.ReadAll(r.Body)
			r.Body.Close()
		}
		return err
	}
	impatient := func(path string) error { return get(path, 300*time.Millisecond) }

	// A create whose body is still on its way holds the only slot (validation reads the body
	// after the slot is taken): from some moment on, a list waits in vain.
	u, _ := url.Parse(e.ts.URL)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"name":"c","qty":3}`
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		data, u.Host, e.ownerToken, len(body), body[:5])
	for i := 0; ; i++ {
		err := impatient(data)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			break
		}
		if err != nil || i == 100 {
			t.Fatalf("list while the slot is held: %v (try %d)", err, i)
		}
	}
	if err := impatient(data + "/1"); err == nil {
		t.Fatal("a record read went past the held slot")
	}
	// Exports do not take a slot: one is answered while the slot is held (with time to spare
	// on a loaded machine; were it waiting for the slot, it would wait for good).
	if err := get(data+"/export?format=csv", 20*time.Second); err != nil {
		t.Fatalf("export while the slot is held: %v", err)
	}
	// The requests given up on are logged as such, not as failures.
	for i := 0; !strings.Contains(e.logs.String(), "client closed the request"); i++ {
		if i == 500 {
			t.Fatalf("no log line for the abandoned request:\n%s", e.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if strings.Contains(e.logs.String(), "request failed") {
		t.Fatalf("an abandoned request was logged as a failure:\n%s", e.logs.String())
	}

	// The rest of the body: the create answers, the slot is free again.
	fmt.Fprint(conn, body[5:])
	st, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.HasPrefix(st, "HTTP/1.1 201") {
		t.Fatalf("the held create: %q %v", st, err)
	}
	if l := e.do("GET", data, nil, bearer(e.ownerToken)).status(200); l.len("data") != 3 {
		t.Fatalf("after the slot is free: %s", l.Body)
	}
}
