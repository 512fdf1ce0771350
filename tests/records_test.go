package tests

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// customersJSON are customer records, loaded with a declared schema.
const customersJSON = `[
 {"id": 1, "name": "Ann", "email": "ann@example.com", "phone": "+4712345678", "status": "active", "score": 80, "tags": ["vip", "nordic"],
  "address": {"street": "Main 1", "city": "Oslo", "country": "NO"}, "metadata": {"source": "import"}},
 {"id": 2, "name": "Bob", "email": "bob@example.com", "status": "inactive", "score": 20, "tags": [], "address": {"city": "Bergen"}},
 {"id": 3, "name": "Cid", "email": "cid@example.com", "status": "active", "score": 55, "tags": ["vip"]}
]`

// customerRecords uploads customersJSON as a dataset with customerRecordSchema, waits until
// it is ready and gives its id and its records' path.
func (e *env) customerRecords() (id, base string) {
	e.t.Helper()
	id = e.uploadAndCreateWith(e.ownerToken, "Customers", "customers.json", customersJSON, map[string]any{"schema": customerRecordSchema()})
	e.waitDataset(e.ownerToken, id)
	return id, "/api/v1/datasets/" + id + "/data"
}

func customerRecordSchema() map[string]any {
	return map[string]any{"columns": []any{
		// unique: relationships point only at keys a constraint keeps unique.
		map[string]any{"name": "src_id", "source": "id", "type": "integer", "unique": true},
		map[string]any{"name": "name", "type": "text", "required": true, "min_length": 1, "max_length": 255},
		map[string]any{"name": "email", "type": "text", "required": true, "unique": true, "format": "email", "max_length": 255},
		map[string]any{"name": "phone", "type": "text", "pattern": `^\+?[1-9][0-9]{1,14}$`},
		map[string]any{"name": "status", "type": "text", "required": true, "enum": []string{"active", "inactive", "pending"}, "default": "pending"},
		map[string]any{"name": "score", "type": "integer", "minimum": 0, "maximum": 100},
		map[string]any{"name": "tags", "type": "text[]"},
		map[string]any{"name": "address", "type": "jsonb"},
		map[string]any{"name": "metadata", "type": "jsonb"},
	}}
}

func TestRecordAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	cust := e.uploadAndCreateWith(e.ownerToken, "Customers", "customers.json", customersJSON, map[string]any{"schema": customerRecordSchema()})
	if d := e.waitDataset(e.ownerToken, cust); d.str("status") != "active" {
		t.Fatalf("customers: %s", d.Body)
	}
	ord := e.uploadAndCreate(e.ownerToken, "Orders", "orders.csv", "id,customer_id,amount\n10,1,19.90\n11,1,5.10\n12,3,100\n")
	e.waitDataset(e.ownerToken, ord)
	// The customers' description was rendered before orders pointed at them: refresh sees the link.
	e.waitJob(e.ownerToken, e.do("POST", "/api/v1/projects/"+e.projectID+"/datasets/"+cust+"/refresh", nil, own).status(202).str("job_id"))

	// The description.
	doc := e.do("GET", "/api/v1/datasets/"+cust+"/openapi.json", nil, own).status(200)
	for _, op := range []string{"listCustomers", "createCustomer", "getCustomer", "updateCustomer", "patchCustomer", "deleteCustomer"} {
		if !strings.Contains(string(doc.Body), `"`+op+`"`) {
			t.Fatalf("no %s in %s", op, doc.Body)
		}
	}
	if doc.str("info.x-dataset-id") != cust || doc.get("components.schemas.CustomerCreate.properties.status.default") != "pending" ||
		doc.get("components.schemas.Customer.properties._links.properties.orders") == nil {
		t.Fatalf("description: %s", doc.Body)
	}
	y := e.do("GET", "/api/v1/datasets/"+cust+"/openapi.yaml", nil, own).status(200)
	if !strings.Contains(string(y.Body), "operationId: listCustomers") || y.Header.Get("ETag") != doc.Header.Get("ETag") {
		t.Fatalf("yaml: %s", y.Body)
	}

	base := "/api/v1/datasets/" + cust + "/data"
	// Create: defaults, Location, version, links.
	c := e.do("POST", base, map[string]any{"name": "Dee", "email": "dee@example.com", "address": map[string]any{"city": "Tromsø", "street": "Sea 2"}}, own).status(201)
	id := c.num("id")
	if c.str("status") != "pending" || c.num("version") != 1 || c.Header.Get("Location") != fmt.Sprintf("%s/%d", base, id) ||
		c.str("_links.self") != fmt.Sprintf("%s/%d", base, id) || c.Header.Get("ETag") == "" {
		t.Fatalf("create: %s", c.Body)
	}
	e.do("POST", base, map[string]any{"name": "X"}, own).apiError(400, "VALIDATION_ERROR", "body.email", "required")
	e.do("POST", base, map[string]any{"name": "X", "email": "x@example.com", "nickname": "x"}, own).apiError(400, "VALIDATION_ERROR")
	e.do("POST", base, map[string]any{"name": "X", "email": "not-an-email"}, own).apiError(400, "VALIDATION_ERROR", "body.email", "format")
	e.do("POST", base, map[string]any{"name": "X", "email": "x@example.com", "status": "gone"}, own).apiError(400, "VALIDATION_ERROR", "body.status", "enum")
	e.do("POST", base, map[string]any{"name": "X", "email": "x@example.com", "score": 101}, own).apiError(400, "VALIDATION_ERROR", "body.score", "maximum")
	e.do("POST", base, map[string]any{"name": "X", "email": "x@example.com", "phone": "012"}, own).apiError(400, "VALIDATION_ERROR", "body.phone", "pattern")
	if r := e.do("POST", base, map[string]any{"name": "X", "email": "ann@example.com"}, own).apiError(409, "CONFLICT"); r.get("error.details.field") != "email" {
		t.Fatalf("unique: %s", r.Body)
	}

	// Idempotency: the same key and body give the first answer again, even concurrently.
	idem := header{"X-Idempotency-Key": "k-1"}
	body := map[string]any{"name": "Idem", "email": "idem@example.com"}
	var wg sync.WaitGroup
	ids := make([]int, 3)
	for i := range ids {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ids[i] = e.do("POST", base, body, own, idem).status(201).num("id")
		}(i)
	}
	wg.Wait()
	if ids[0] != ids[1] || ids[1] != ids[2] {
		t.Fatalf("one key made several records: %v", ids)
	}
	if r := e.do("POST", base, body, own, idem).status(201); r.Header.Get("Idempotent-Replayed") != "true" || r.num("id") != ids[0] {
		t.Fatalf("replay: %s", r.Body)
	}
	e.do("POST", base, map[string]any{"name": "Other", "email": "other@example.com"}, own, idem).apiError(422, "IDEMPOTENCY_KEY_REUSED")
	e.do("DELETE", fmt.Sprintf("%s/%d?soft=false", base, ids[0]), nil, own).status(200)

	// List: filters, sort, fields, search, pagination.
	l := e.do("GET", base+"?filter[status]=active&filter[score][gte]=50&sort=-score&fields=name,score", nil, own).status(200)
	if l.len("data") != 2 || l.str("data.0.name") != "Ann" || l.get("data.0.phone") != nil || l.num("pagination.total") != 2 ||
		l.num("meta.filters_applied") != 2 || l.str("meta.sort.0") != "-score" {
		t.Fatalf("list: %s", l.Body)
	}
	for q, want := range map[string][]string{
		"filter[address.city]=Oslo":                                               {"Ann"},
		"filter[tags][contains]=vip&sort=name":                                    {"Ann", "Cid"},
		"filter[name][in]=Bob,Cid&sort=-name":                                     {"Cid", "Bob"},
		"filter[phone][is]=null&sort=name":                                        {"Bob", "Cid", "Dee"},
		"filter[score][between]=10,60&sort=score":                                 {"Bob", "Cid"},
		"filter[name][startswith]=A":                                              {"Ann"},
		"filter[email][ilike]=%25EXAMPLE.COM&filter[status][ne]=active&sort=name": {"Bob", "Dee"},
		"search=tromsø":                                                           {"Dee"},
		"filter[status][nin]=active&sort=name":                                    {"Bob", "Dee"},
	} {
		r := e.do("GET", base+"?"+q, nil, own).status(200)
		var got []string
		for i := 0; i < r.len("data"); i++ {
			got = append(got, r.str(fmt.Sprintf("data.%d.name", i)))
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: %v, want %v", q, got, want)
		}
	}
	p := e.do("GET", base+"?limit=1&page=2&sort=name", nil, own).status(200)
	if p.str("data.0.name") != "Bob" || p.num("pagination.pages") != 4 || p.get("pagination.has_next") != true ||
		!strings.HasPrefix(p.str("pagination.next_page_url"), base+"?") {
		t.Fatalf("pages: %s", p.Body)
	}
	e.do("GET", base+"?limit=1001", nil, own).apiError(400, "VALIDATION_ERROR", "query.limit", "maximum")
	// Nothing from a request reaches SQL but values: hostile names are refused.
	for _, q := range []string{"sort=name;DROP TABLE x", "sort=-(select 1)", "fields=name,\"email\"", "exclude=pg_sleep(1)",
		"filter[name';--][eq]=x", "filter[name][eq]]=x", "filter[name][regex]=x", "filter[score][gt]=1 OR 1=1", "filter[tags][eq]=x"} {
		e.do("GET", base+"?"+strings.ReplaceAll(url.PathEscape(q), "%3D", "="), nil, own).apiError(400, "VALIDATION_ERROR")
	}
	if r := e.do("GET", base+"?filter[name]="+url.QueryEscape("x' OR '1'='1"), nil, own).status(200); r.len("data") != 0 {
		t.Fatalf("a quote in a value matched: %s", r.Body)
	}
	if r := e.do("GET", base+"?search="+url.QueryEscape("'); DROP TABLE x; --"), nil, own).status(200); r.len("data") != 0 {
		t.Fatalf("search: %s", r.Body)
	}
	if r := e.do("GET", base+"?filter[address.city'))--]=x", nil, own).status(200); r.len("data") != 0 {
		t.Fatalf("a JSON path is a bound parameter: %s", r.Body)
	}
	if l.Header.Get("X-RateLimit-Limit") != "1000" || l.Header.Get("X-RateLimit-Remaining") == "" {
		t.Fatalf("rate-limit headers: %v", l.Header)
	}

	// Read with ETag; related links.
	one := fmt.Sprintf("%s/%d", base, id)
	g := e.do("GET", base+"/1", nil, own).status(200)
	if g.str("name") != "Ann" || !strings.Contains(g.str("_links.orders"), "filter%5Bcustomer_id%5D=1") {
		t.Fatalf("read: %s", g.Body)
	}
	e.do("GET", base+"/1", nil, own, header{"If-None-Match": g.Header.Get("ETag")}).status(304)
	inc := e.do("GET", base+"/1?include=orders", nil, own).status(200)
	if inc.len("_embedded.orders") != 2 || inc.num("_embedded.orders.0.customer_id") != 1 {
		t.Fatalf("include: %s", inc.Body)
	}
	ex := e.do("GET", "/api/v1/datasets/"+ord+"/data/10?expand=customer", nil, own).status(200)
	if ex.str("_embedded.customer.name") != "Ann" || !strings.Contains(ex.str("_links.customer"), "filter%5Bsrc_id%5D=1") {
		t.Fatalf("expand: %s", ex.Body)
	}
	e.do("GET", base+"/1?include=invoices", nil, own).apiError(400, "VALIDATION_ERROR", "query.include", "unknown_relation")
	e.do("GET", base+"/999", nil, own).apiError(404, "RECORD_NOT_FOUND")

	// Replace with optimistic locking: a stale version or ETag is refused and nothing is written.
	full := map[string]any{"name": "Dee", "email": "dee@example.com", "status": "active", "score": 70, "version": 1}
	u := e.do("PUT", one, full, own).status(200)
	if u.num("version") != 2 || u.str("status") != "active" || u.get("address") != nil {
		t.Fatalf("put: %s", u.Body)
	}
	full["version"] = 1
	e.do("PUT", one, full, own).apiError(409, "OPTIMISTIC_LOCK_ERROR")
	delete(full, "version")
	e.do("PUT", one, full, own, header{"If-Match": c.Header.Get("ETag")}).apiError(409, "OPTIMISTIC_LOCK_ERROR")
	e.do("PUT", one, full, own, header{"If-Match": u.Header.Get("ETag")}).status(200)

	// Patch merges objects.
	e.do("PATCH", one, map[string]any{"address": map[string]any{"city": "Bodø", "street": "Quay 3"}}, own).status(200)
	pt := e.do("PATCH", one, map[string]any{"address": map[string]any{"city": "Oslo"}, "score": 71}, own).status(200)
	if pt.str("address.city") != "Oslo" || pt.str("address.street") != "Quay 3" || pt.num("score") != 71 || pt.num("version") != 5 {
		t.Fatalf("patch: %s", pt.Body)
	}
	e.do("PATCH", one, map[string]any{"score": -1}, own).apiError(400, "VALIDATION_ERROR", "body.score", "minimum")
	e.do("PATCH", one, map[string]any{}, own).apiError(400, "VALIDATION_ERROR")

	// JSON Patch: every operation; a failing test changes nothing.
	jp := func(ops string, hs ...header) *resp {
		return e.do("PATCH", one, ops, append(hs, own, header{"Content-Type": "application/json-patch+json"})...)
	}
	r := jp(`[{"op":"test","path":"/name","value":"Dee"},{"op":"replace","path":"/score","value":60},{"op":"add","path":"/tags","value":[]},{"op":"add","path":"/tags/-","value":"new"},
		{"op":"copy","from":"/address/city","path":"/phone"},{"op":"move","from":"/address/street","path":"/address/line1"},{"op":"remove","path":"/phone"}]`).status(200)
	if r.num("score") != 60 || r.str("tags.0") != "new" || r.get("phone") != nil || r.get("address.street") != nil || r.str("address.line1") != "Quay 3" || r.num("version") != 6 {
		t.Fatalf("json patch: %s", r.Body)
	}
	jp(`[{"op":"add","path":"/metadata","value":{"k":1}}]`).status(200)
	before := e.do("GET", one, nil, own).status(200)
	jp(`[{"op":"replace","path":"/score","value":1},{"op":"test","path":"/name","value":"Nobody"}]`).apiError(409, "PATCH_TEST_FAILED")
	jp(`[{"op":"remove","path":"/email"}]`).apiError(400, "VALIDATION_ERROR", "body.email", "required")
	jp(`[{"op":"replace","path":"/nope","value":1}]`).apiError(400, "VALIDATION_ERROR")
	jp(`[{"op":"jump","path":"/name"}]`).apiError(400, "VALIDATION_ERROR")
	if after := e.do("GET", one, nil, own).status(200); after.num("version") != before.num("version") || after.num("score") != 60 {
		t.Fatalf("a failed patch changed the record: %s", after.Body)
	}
	// Update operators.
	r = e.do("PATCH", one, map[string]any{"$inc": map[string]any{"score": 5}, "$push": map[string]any{"tags": "x"},
		"$setOnInsert": map[string]any{"phone": "+4799999999", "name": "Ignored"}}, own).status(200)
	if r.num("score") != 65 || r.len("tags") != 2 || r.str("phone") != "+4799999999" || r.str("name") != "Dee" {
		t.Fatalf("operators: %s", r.Body)
	}
	r = e.do("PATCH", one, map[string]any{"$pull": map[string]any{"tags": "new"}, "$inc": map[string]any{"score": -5}}, own).status(200)
	if r.len("tags") != 1 || r.str("tags.0") != "x" || r.num("score") != 60 {
		t.Fatalf("pull: %s", r.Body)
	}
	e.do("PATCH", one, map[string]any{"$inc": map[string]any{"score": 50}}, own).apiError(400, "VALIDATION_ERROR", "body.score", "maximum")
	e.do("PATCH", one, map[string]any{"$inc": map[string]any{"name": 1}}, own).apiError(400, "VALIDATION_ERROR")

	// Permissions: viewers may not read records, analysts may not write.
	_, viewer := e.member(e.orgID, "viewer")
	_, analyst := e.member(e.orgID, "analyst")
	e.do("GET", base, nil, bearer(viewer)).authError(403, "PERMISSION_DENIED")
	e.do("GET", base, nil, bearer(analyst)).status(200)
	e.do("POST", base, map[string]any{"name": "Y", "email": "y@example.com"}, bearer(analyst)).authError(403, "PERMISSION_DENIED")
	other := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Elsewhere"}, own).status(201).str("id")
	_, outsider := e.member(other, "admin")
	e.do("GET", base, nil, bearer(outsider)).apiError(404, "DATASET_NOT_FOUND")
	e.do("GET", "/api/v1/datasets/ds_nope/data", nil, own).apiError(404, "DATASET_NOT_FOUND")

	// A customer with orders cannot go alone; cascade takes the orders with it.
	if r := e.do("DELETE", base+"/3", nil, own).apiError(409, "CONFLICT"); r.num("error.details.count") != 1 {
		t.Fatalf("referenced: %s", r.Body)
	}
	cd := e.do("DELETE", base+"/3?cascade=true", nil, own).status(200)
	if cd.num("cascaded."+ord) != 1 {
		t.Fatalf("cascade: %s", cd.Body)
	}
	if o := e.do("GET", "/api/v1/datasets/"+ord+"/data?filter[customer_id]=3", nil, own).status(200); o.len("data") != 0 {
		t.Fatalf("orders of the deleted customer: %s", o.Body)
	}

	// Delete: soft by default, then for good.
	d := e.do("DELETE", one, nil, own).status(200)
	if d.get("deleted") != true || d.get("deleted_at") == nil {
		t.Fatalf("delete: %s", d.Body)
	}
	e.do("GET", one, nil, own).apiError(404, "RECORD_NOT_FOUND")
	if l := e.do("GET", base, nil, own).status(200); l.num("pagination.total") != 2 {
		t.Fatalf("a soft-deleted record is listed: %s", l.Body)
	}
	var kept int
	e.st.DB.Get(&kept, fmt.Sprintf(`SELECT count(*) FROM %q.%q WHERE deleted_at IS NOT NULL`, e.orgID, cust))
	if kept != 2 {
		t.Fatal("the soft delete removed the row")
	}
	h := e.do("DELETE", base+"/2?soft=false", nil, own).status(200)
	if h.get("deleted_at") != nil {
		t.Fatalf("hard delete: %s", h.Body)
	}
	e.do("DELETE", base+"/2", nil, own).apiError(404, "RECORD_NOT_FOUND")
}

func TestRecordCursorPagination(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	var csv strings.Builder
	csv.WriteString("name,score\n")
	for i := 0; i < 23; i++ {
		score := fmt.Sprint(i % 5)
		if i%7 == 0 {
			score = "" // NULLs in the sort key
		}
		fmt.Fprintf(&csv, "n%02d,%s\n", i, score)
	}
	id := e.uploadAndCreate(e.ownerToken, "Scores", "scores.csv", csv.String())
	e.waitDataset(e.ownerToken, id)
	base := "/api/v1/datasets/" + id + "/data"
	names := func(r *resp) []string {
		var out []string
		for i := 0; i < r.len("data"); i++ {
			out = append(out, r.str(fmt.Sprintf("data.%d.name", i)))
		}
		return out
	}
	for _, sort := range []string{"-score,name", "score", "-name", "-created_at"} {
		all := names(e.do("GET", base+"?limit=1000&sort="+sort, nil, own).status(200))
		var walked []string
		r := e.do("GET", base+"?limit=4&sort="+sort, nil, own).status(200)
		last := r
		for {
			walked = append(walked, names(r)...)
			last = r
			next, _ := r.get("pagination.next_cursor").(string)
			if next == "" {
				break
			}
			r = e.do("GET", base+"?limit=4&sort="+sort+"&cursor="+next, nil, own).status(200)
		}
		if strings.Join(walked, ",") != strings.Join(all, ",") {
			t.Fatalf("sort %s forward:\n%v\nwant\n%v", sort, walked, all)
		}
		// And back from the last page.
		var back []string
		r = last
		for {
			back = append(names(r), back...)
			prev, _ := r.get("pagination.prev_cursor").(string)
			if prev == "" {
				break
			}
			r = e.do("GET", base+"?limit=4&sort="+sort+"&cursor="+prev, nil, own).status(200)
		}
		if strings.Join(back, ",") != strings.Join(all, ",") {
			t.Fatalf("sort %s backward:\n%v\nwant\n%v", sort, back, all)
		}
	}
	// Rows inserted before the position do not shift the pages after it.
	first := e.do("GET", base+"?limit=5&sort=name", nil, own).status(200)
	for _, n := range []string{"a1", "a2", "a3"} {
		e.do("POST", base, map[string]any{"name": n}, own).status(201)
	}
	second := e.do("GET", base+"?limit=5&sort=name&cursor="+first.str("pagination.next_cursor"), nil, own).status(200)
	if got := names(second); got[0] != "n05" || second.get("pagination.has_prev") != true {
		t.Fatalf("after inserts: %v", got)
	}
	// Cursors of another sort, another dataset, or made up are refused.
	cur := first.str("pagination.next_cursor")
	e.do("GET", base+"?sort=-name&cursor="+cur, nil, own).apiError(400, "VALIDATION_ERROR", "query.cursor", "invalid_cursor")
	other := e.uploadAndCreate(e.ownerToken, "Other", "o.csv", "name\nx\n")
	e.waitDataset(e.ownerToken, other)
	e.do("GET", "/api/v1/datasets/"+other+"/data?sort=name&cursor="+cur, nil, own).apiError(400, "VALIDATION_ERROR", "query.cursor", "invalid_cursor")
	e.do("GET", base+"?cursor=bm9wZQ", nil, own).apiError(400, "VALIDATION_ERROR", "query.cursor", "invalid_cursor")
	forged := base64URL(`{"d":"` + id + `","s":"name","v":["x' OR 1=1 --", "not a number"]}`)
	e.do("GET", base+"?sort=name&cursor="+forged, nil, own).apiError(400, "VALIDATION_ERROR", "query.cursor", "invalid_cursor")
	// Counts: exact on request, estimated (exact below the threshold) by default.
	if r := e.do("GET", base+"?count=exact", nil, own).status(200); r.num("pagination.total") != 26 || r.get("pagination.total_estimated") != false {
		t.Fatalf("count: %s", r.Body)
	}
}

func base64URL(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func TestRecordAggregate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.uploadAndCreate(e.ownerToken, "Sales", "sales.csv", "region,amount,sold_at,rep\n"+
		"north,10,2024-01-05T10:00:00Z,ann\nnorth,20,2024-01-20T10:00:00Z,bob\nsouth,5,2024-02-01T10:00:00Z,ann\n"+
		"south,7.5,2024-02-03T10:00:00Z,\nwest,100,2024-03-01T10:00:00Z,cid\n")
	e.waitDataset(e.ownerToken, id)
	base := "/api/v1/datasets/" + id + "/data/aggregate"
	r := e.do("GET", base+"?group_by=region&agg=count,sum(amount),avg(amount),count_distinct(rep)&sort=-sum_amount", nil, own).status(200)
	if r.num("meta.groups") != 3 || r.str("data.0.region") != "west" || r.num("data.1.sum_amount") != 30 || r.num("data.1.count") != 2 ||
		r.get("data.2.avg_amount") != 6.25 || r.num("data.2.count_distinct_rep") != 1 || r.num("aggregations.count") != 5 || r.get("aggregations.sum_amount") != 142.5 {
		t.Fatalf("aggregate: %s", r.Body)
	}
	m := e.do("GET", base+"?group_by=date_trunc(month,sold_at)&agg=count,max(amount)&having=count>1&sort=sold_at_month", nil, own).status(200)
	if m.num("meta.groups") != 2 || !strings.HasPrefix(m.str("data.0.sold_at_month"), "2024-01-01") || m.get("data.1.max_amount") != 7.5 {
		t.Fatalf("by month: %s", m.Body)
	}
	f := e.do("GET", base+"?group_by=rep&agg=count&filter[region]=north&filter[amount][gt]=15", nil, own).status(200)
	if f.num("meta.groups") != 1 || f.str("data.0.rep") != "bob" {
		t.Fatalf("filtered: %s", f.Body)
	}
	for _, q := range []string{"group_by=region", "group_by=nope&agg=count", "group_by=region&agg=sum(rep)", "group_by=region&agg=count&having=count>1%3Bdrop",
		"group_by=date_trunc(eon,sold_at)&agg=count", "group_by=region&agg=count&sort=amount", "group_by=region&agg=pg_sleep(1)"} {
		e.do("GET", base+"?"+q, nil, own).apiError(400, "VALIDATION_ERROR")
	}
	// A name twice would be a duplicate key of the answer's objects.
	e.do("GET", base+"?group_by=region&agg=sum(amount),sum(amount)", nil, own).apiError(400, "VALIDATION_ERROR", "query.agg", "duplicate")
	e.do("GET", base+"?group_by=region,region&agg=count", nil, own).apiError(400, "VALIDATION_ERROR", "query.group_by", "duplicate")
}

// Concurrent replaces of the same version: exactly one wins, the others get the optimistic
// lock error, and the record holds the winner's values.
func TestRecordConcurrentReplace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.uploadAndCreate(e.ownerToken, "Counters", "c.csv", "name,n\nx,0\n")
	e.waitDataset(e.ownerToken, id)
	one := "/api/v1/datasets/" + id + "/data/1"
	const writers = 8
	codes := make([]int, writers)
	var wg sync.WaitGroup
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			codes[i] = e.do("PUT", one, map[string]any{"name": fmt.Sprintf("w%d", i), "n": i, "version": 1}, own).Code
		}(i)
	}
	wg.Wait()
	won := -1
	for i, c := range codes {
		switch c {
		case 200:
			if won >= 0 {
				t.Fatalf("two writers won: %v", codes)
			}
			won = i
		case 409:
		default:
			t.Fatalf("codes %v", codes)
		}
	}
	if won < 0 {
		t.Fatalf("no writer won: %v", codes)
	}
	r := e.do("GET", one, nil, own).status(200)
	if r.num("version") != 2 || r.str("name") != fmt.Sprintf("w%d", won) {
		t.Fatalf("record: %s", r.Body)
	}
}

func TestRecordBulk(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	_, base := e.customerRecords()
	count := func() int { return e.do("GET", base+"?count=exact", nil, own).status(200).num("pagination.total") }

	// Atomic (the default): one bad operation and nothing is written.
	r := e.do("POST", base+"/bulk", map[string]any{"operations": []any{
		map[string]any{"method": "create", "data": map[string]any{"name": "New", "email": "new@example.com"}},
		map[string]any{"method": "update", "ids": []int{1}, "data": map[string]any{"score": 99}},
		map[string]any{"method": "create", "data": map[string]any{"name": "Dup", "email": "ann@example.com"}},
	}}, own).status(200)
	if r.num("succeeded") != 0 || r.num("failed") != 3 || r.str("results.2.error.code") != "CONFLICT" || r.str("results.0.error.code") != "ROLLED_BACK" {
		t.Fatalf("atomic: %s", r.Body)
	}
	if count() != 3 || e.do("GET", base+"/1", nil, own).status(200).num("score") != 80 {
		t.Fatal("a failed atomic bulk wrote something")
	}
	// Atomic and valid: everything.
	r = e.do("POST", base+"/bulk", map[string]any{"operations": []any{
		map[string]any{"method": "create", "data": map[string]any{"name": "New", "email": "new@example.com"}},
		map[string]any{"method": "update", "filter": map[string]any{"status": "active"}, "data": map[string]any{"score": 10}},
		map[string]any{"method": "delete", "filter": map[string]any{"score": map[string]any{"lt": 30}, "status": "inactive"}},
	}}, own).status(200)
	if r.num("succeeded") != 3 || r.num("results.1.count") != 2 || r.num("results.2.count") != 1 || r.num("results.0.id") < 4 {
		t.Fatalf("bulk: %s", r.Body)
	}
	if count() != 3 || e.do("GET", base+"/3", nil, own).status(200).num("score") != 10 {
		t.Fatal("bulk effects missing")
	}
	// Not atomic: the first failure stops the rest, unless continue_on_error.
	ops := []any{
		map[string]any{"method": "create", "data": map[string]any{"name": "A", "email": "a@example.com"}},
		map[string]any{"method": "create", "data": map[string]any{"name": "B"}},
		map[string]any{"method": "create", "data": map[string]any{"name": "C", "email": "c@example.com"}},
	}
	r = e.do("POST", base+"/bulk", map[string]any{"operations": ops, "options": map[string]any{"atomic": false}}, own).status(200)
	if r.num("succeeded") != 1 || r.str("results.1.error.code") != "VALIDATION_ERROR" || r.str("results.2.error.code") != "SKIPPED" {
		t.Fatalf("stop: %s", r.Body)
	}
	ops[0] = map[string]any{"method": "create", "data": map[string]any{"name": "A2", "email": "a2@example.com"}}
	r = e.do("POST", base+"/bulk", map[string]any{"operations": ops, "options": map[string]any{"atomic": false, "continue_on_error": true}}, own).status(200)
	if r.num("succeeded") != 2 || r.num("failed") != 1 {
		t.Fatalf("continue: %s", r.Body)
	}
	e.do("POST", base+"/bulk", map[string]any{"operations": []any{map[string]any{"method": "upsert"}}}, own).apiError(400, "VALIDATION_ERROR")
	e.do("POST", base+"/bulk", map[string]any{"operations": []any{map[string]any{"method": "delete"}}}, own).status(200)
	_, analyst := e.member(e.orgID, "analyst")
	e.do("POST", base+"/bulk", map[string]any{"operations": ops}, bearer(analyst)).authError(403, "PERMISSION_DENIED")
}

// TestDefaultOrderIndex: a dataset keyed by its own column gets the index of the default
// order (newest first, then that key), and the first page in the order a list says it used
// by default reads it, with nothing to sort.
func TestDefaultOrderIndex(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.uploadAndCreate(e.ownerToken, "Patients", "patients.csv", "ward,patient_id,name\nB,P-2,Bo\nA,P-1,Al\nC,P-3,Cy\n")
	var def string
	for i := 0; i < 500 && def == ""; i++ {
		// Valid: a concurrent build shows the index before it can be used.
		e.st.DB.Get(&def, `SELECT x.indexdef FROM pg_indexes x JOIN pg_class c ON c.relname = x.indexname
			JOIN pg_index i ON i.indexrelid = c.oid WHERE x.tablename = $1 AND x.indexdef LIKE '%created_at DESC%' AND i.indisvalid`, id)
		if def == "" {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !strings.Contains(def, "(created_at DESC, patient_id)") {
		t.Fatalf("default order index: %q", def)
	}
	r := e.do("GET", "/api/v1/datasets/"+id+"/data", nil, bearer(e.ownerToken)).status(200)
	if r.str("data.0.patient_id") == "" {
		t.Fatalf("list: %s", r.Body)
	}
	// The order the list says it used, as documented: NULLs first descending, last ascending,
	// and the key, when not named, the way of the last field.
	var order []string
	desc := false
	for i := 0; i < r.len("meta.sort"); i++ {
		f := r.str(fmt.Sprintf("meta.sort.%d", i))
		desc = strings.HasPrefix(f, "-")
		if desc {
			order = append(order, strconv.Quote(f[1:])+" DESC NULLS FIRST")
		} else {
			order = append(order, strconv.Quote(f)+" ASC NULLS LAST")
		}
	}
	if !strings.Contains(strings.Join(order, ","), `"patient_id"`) {
		order = append(order, map[bool]string{false: `patient_id ASC`, true: `patient_id DESC`}[desc])
	}
	var lines []string
	tx := e.st.DB.MustBegin()
	tx.MustExec(`SET LOCAL enable_seqscan = off`)
	tx.Select(&lines, fmt.Sprintf(`EXPLAIN SELECT * FROM %q.%q ORDER BY %s LIMIT 20`, e.orgID, id, strings.Join(order, ", ")))
	tx.Rollback()
	if plan := strings.Join(lines, "\n"); !strings.Contains(plan, "Index Scan") || !strings.Contains(plan, "_created_") || strings.Contains(plan, "Sort") {
		t.Fatalf("order %v: plan: %s", order, plan)
	}
}

// Search is backed by a GIN index on the same document expression, built after the load and
// rebuilt when the columns change.
func TestRecordSearchIndex(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.uploadAndCreateWith(e.ownerToken, "Customers", "customers.json", customersJSON, map[string]any{"schema": customerRecordSchema()})
	e.waitDataset(e.ownerToken, id)
	indexes := func() []string {
		var out []string
		e.st.DB.Select(&out, `SELECT indexdef FROM pg_indexes WHERE tablename = $1 AND indexname LIKE '%search%'`, id)
		return out
	}
	wait := func(want func([]string) bool) []string {
		for i := 0; i < 300; i++ {
			if x := indexes(); want(x) {
				return x
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("search index: %v", indexes())
		return nil
	}
	first := wait(func(x []string) bool { return len(x) == 1 })
	if !strings.Contains(first[0], "gin") || !strings.Contains(first[0], "jsonb_to_tsvector") {
		t.Fatalf("index: %v", first)
	}
	// Filterable columns get a btree each, the default sort one of its own; JSON and arrays none.
	var cols []string
	for i := 0; i < 300; i++ {
		cols = nil
		e.st.DB.Select(&cols, `SELECT indexname FROM pg_indexes WHERE tablename = $1 AND indexname LIKE '%\_idx' ORDER BY 1`, id)
		if len(cols) == 7 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(cols) != 7 || !strings.Contains(cols[0], "_created_id") || strings.Contains(strings.Join(cols, ","), "tags") {
		t.Fatalf("column indexes: %v", cols)
	}
	var plan string
	tx := e.st.DB.MustBegin()
	tx.MustExec(`SET LOCAL enable_seqscan = off`) // three rows: let the planner show it has the index
	tx.Get(&plan, fmt.Sprintf(`EXPLAIN SELECT * FROM %q.%q WHERE score = 80`, e.orgID, id))
	var sorted []string // a list's order by the column (then the key): the index alone gives it
	tx.Select(&sorted, fmt.Sprintf(`EXPLAIN SELECT * FROM %q.%q ORDER BY score ASC NULLS LAST, id ASC NULLS LAST LIMIT 21`, e.orgID, id))
	tx.Rollback()
	if !strings.Contains(plan, "score_idx") {
		t.Fatalf("plan: %s", plan)
	}
	if s := strings.Join(sorted, "\n"); !strings.Contains(s, "score_idx") || strings.Contains(s, "Sort") {
		t.Fatalf("sorted plan: %s", s)
	}
	if r := e.do("GET", "/api/v1/datasets/"+id+"/data?search=oslo", nil, own).status(200); r.len("data") != 1 || r.str("data.0.name") != "Ann" {
		t.Fatalf("search: %s", r.Body)
	}
	// A column index of the column alone, as datasets made before indexes ended with the key
	// have, is built again, under its name, when the indexes are next built.
	var scoreIdx string
	e.st.DB.Get(&scoreIdx, `SELECT format('%I.%I', schemaname, indexname) FROM pg_indexes WHERE tablename = $1 AND indexname LIKE '%\_score\_idx'`, id)
	e.st.DB.MustExec(`DROP INDEX ` + scoreIdx + `; CREATE INDEX ` + scoreIdx[strings.Index(scoreIdx, ".")+1:] + fmt.Sprintf(` ON %q.%q (score)`, e.orgID, id))
	// Dropping a searched column rebuilds the index for the new document.
	e.do("PUT", "/api/v1/datasets/"+id+"/schema", map[string]any{"changes": []any{map[string]any{"op": "drop_column", "column": "address"}}}, own).status(200)
	second := wait(func(x []string) bool { return len(x) == 1 && x[0] != first[0] })
	if strings.Contains(second[0], "jsonb_to_tsvector('simple'::regconfig, COALESCE(address") {
		t.Fatalf("old document: %v", second)
	}
	var scoreDef string
	for i := 0; i < 300 && !strings.HasSuffix(scoreDef, "(score, id)"); i++ {
		time.Sleep(20 * time.Millisecond)
		e.st.DB.Get(&scoreDef, `SELECT coalesce(max(indexdef), '') FROM pg_indexes WHERE tablename = $1 AND indexname LIKE '%\_score\_idx'`, id)
	}
	if !strings.HasSuffix(scoreDef, "(score, id)") {
		t.Fatalf("the score index was not built again: %q", scoreDef)
	}
	// A rebuild stopped after dropping the old index, before renaming the new one: the next
	// build drops what it left and makes the index under its name.
	e.st.DB.MustExec(`DROP INDEX ` + scoreIdx + `; CREATE INDEX ` + scoreIdx[strings.Index(scoreIdx, ".")+1:] + `_next` + fmt.Sprintf(` ON %q.%q (score)`, e.orgID, id))
	e.do("PUT", "/api/v1/datasets/"+id+"/schema", map[string]any{"changes": []any{map[string]any{"op": "drop_column", "column": "metadata"}}}, own).status(200)
	var scoreIdxs []string
	for i := 0; i < 300; i++ {
		scoreIdxs = nil
		e.st.DB.Select(&scoreIdxs, `SELECT indexname || ' ' || indexdef FROM pg_indexes WHERE tablename = $1 AND indexname LIKE '%\_score\_%' ORDER BY 1`, id)
		if len(scoreIdxs) == 1 && strings.HasSuffix(scoreIdxs[0], "(score, id)") && strings.Contains(scoreIdxs[0], "_score_idx ") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(scoreIdxs) != 1 || !strings.HasSuffix(scoreIdxs[0], "(score, id)") || !strings.Contains(scoreIdxs[0], "_score_idx ") {
		t.Fatalf("after a stopped rebuild: %q", scoreIdxs)
	}
	if r := e.do("GET", "/api/v1/datasets/"+id+"/data?search=bob", nil, own).status(200); r.len("data") != 1 {
		t.Fatalf("search after the change: %s", r.Body)
	}
}

// Every filter operator, on the field types it applies to.
func TestRecordFilterOperators(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.uploadAndCreate(e.ownerToken, "Things", "things.json", `[
		{"name": "alpha", "n": 1, "ok": true, "day": "2024-01-01", "tags": ["a", "b"], "meta": {"k": "x", "deep": {"v": 1}}},
		{"name": "beta", "n": 5, "ok": false, "day": "2024-02-01", "tags": ["b"], "meta": {"k": "y"}},
		{"name": "gamma", "n": 10, "ok": true, "day": "2024-03-01", "tags": [], "meta": {"k": "x"}},
		{"name": "Delta_%", "n": null, "ok": null, "day": null, "tags": null, "meta": null}
	]`)
	if d := e.waitDataset(e.ownerToken, id); d.str("status") != "active" {
		t.Fatalf("dataset: %s", d.Body)
	}
	for q, want := range map[string]string{
		"filter[n][eq]=5":                             "beta",
		"filter[n][ne]=5":                             "alpha,gamma,Delta_%",
		"filter[n][gt]=1":                             "beta,gamma",
		"filter[n][gte]=5":                            "beta,gamma",
		"filter[n][lt]=5":                             "alpha",
		"filter[n][lte]=5":                            "alpha,beta",
		"filter[n][in]=1,10":                          "alpha,gamma",
		"filter[n][nin]=1,10":                         "beta,Delta_%",
		"filter[name][like]=%25a":                     "alpha,beta,gamma",
		"filter[name][ilike]=D%25":                    "Delta_%",
		"filter[name][contains]=ET":                   "beta",
		"filter[name][startswith]=Delta_":             "Delta_%",
		"filter[name][endswith]=_%25":                 "Delta_%",
		"filter[name][endswith]=a":                    "alpha,beta,gamma",
		"filter[tags][contains]=b":                    "alpha,beta",
		"filter[meta][contains]={\"k\":\"x\"}":        "alpha,gamma",
		"filter[meta.k]=y":                            "beta",
		"filter[meta.deep.v]=1":                       "alpha",
		"filter[n][is]=null":                          "Delta_%",
		"filter[n][is]=notnull":                       "alpha,beta,gamma",
		"filter[ok][is]=true":                         "alpha,gamma",
		"filter[ok][is]=false":                        "beta",
		"filter[day][between]=2024-01-15,2024-03-01":  "beta,gamma",
		"filter[day][gte]=2024-02-01&filter[ok]=true": "gamma",
	} {
		r := e.do("GET", "/api/v1/datasets/"+id+"/data?sort=id&"+strings.ReplaceAll(q, "\"", "%22"), nil, own).status(200)
		var got []string
		for i := 0; i < r.len("data"); i++ {
			got = append(got, r.str(fmt.Sprintf("data.%d.name", i)))
		}
		if strings.Join(got, ",") != want {
			t.Errorf("%s: %v, want %s", q, got, want)
		}
	}
	for _, q := range []string{"filter[n][gt]=abc", "filter[n][like]=1", "filter[ok][is]=maybe", "filter[name][is]=true",
		"filter[n][between]=1", "filter[tags][eq]=a", "filter[meta][contains]=notjson", "filter[day][gt]=yesterday", "filter[name.x]=1"} {
		e.do("GET", "/api/v1/datasets/"+id+"/data?"+q, nil, own).apiError(400, "VALIDATION_ERROR")
	}
}

// TestHugePageNumber: a page number past the largest is a 400 naming the parameter, on the
// record API and on the platform's lists (it was a 500: OFFSET must not be negative).
func TestHugePageNumber(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ds := e.customers()
	own := bearer(e.ownerToken)
	for _, page := range []string{"9223372036854775807", "1000001"} {
		e.do("GET", "/api/v1/datasets/"+ds+"/data?page="+page, nil, own).apiError(400, "VALIDATION_ERROR", "query.page", "maximum")
		e.do("GET", "/api/v1/organizations?page="+page, nil, own).apiError(400, "VALIDATION_ERROR", "query.page", "maximum")
	}
	e.do("GET", "/api/v1/datasets/"+ds+"/data?page=1000000", nil, own).status(200)
}

// TestUnknownQueryParameters: a parameter the operation does not declare is a 400 naming it
// (with the equivalent where there is one), never ignored: PostgREST's status=eq.active would
// otherwise list every record (nothing is silently ignored).
func TestUnknownQueryParameters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ds := e.customers()
	own := bearer(e.ownerToken)
	base := "/api/v1/datasets/" + ds + "/data"
	for q, want := range map[string]string{
		"status=eq.active":  "filter[status][eq]=active",
		"status=active":     "filter[status]=active",
		"select=name,email": "fields=name,email",
		"order=name.desc":   "sort=",
		"offset=10":         "cursor=",
		"nonsense=1":        "unknown query parameter nonsense",
	} {
		r := e.do("GET", base+"?"+q, nil, own).apiError(400, "VALIDATION_ERROR", "query."+strings.SplitN(q, "=", 2)[0], "unknown_field")
		if !strings.Contains(r.str("error.details.0.message"), want) {
			t.Errorf("%s: %s", q, r.Body)
		}
	}
	// Declared parameters, filters and the api_key credential pass; so do the platform's.
	e.do("GET", base+"?filter[status]=active&fields=name&limit=5", nil, own).status(200)
	e.do("GET", base+"/"+"1?fields=name", nil, own).status(200)
	e.do("GET", base+"/1?include=nothing_here&bogus=1", nil, own).apiError(400, "VALIDATION_ERROR", "query.bogus", "unknown_field")
	e.do("GET", "/api/v1/organizations?page=1&bogus=1", nil, own).apiError(400, "VALIDATION_ERROR", "query.bogus", "unknown_field")
	e.do("GET", "/api/v1/organizations?page=1&limit=5", nil, own).status(200)
}

// TestFieldsAreExact: fields returns the fields it names and the record's key (which names
// the record, as JSON:API keeps id), required ones included only when named, on lists, reads
// and writes (X-Return-Fields); exclude leaves out any field but the key; and every such answer
// matches the published description, which requires the key.
func TestFieldsAreExact(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.customers()
	base := "/api/v1/datasets/" + id + "/data"
	keys := func(r *resp, path string) string {
		t.Helper()
		m, ok := r.get(path).(map[string]any)
		if !ok {
			t.Fatalf("%s is no object: %s", path, r.Body)
		}
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return strings.Join(ks, ",")
	}
	for _, tc := range []struct {
		r          *resp
		path, want string
	}{
		{e.do("GET", base+"?fields=name,status", nil, own).status(200), "data.0", "_links,id,name,status"},
		{e.do("GET", base+"?fields=email", nil, own).status(200), "data.0", "_links,email,id"},
		{e.do("GET", base+"?exclude=created_at,updated_at,version,tags,phone", nil, own).status(200), "data.0", "_links,address,email,id,metadata,name,score,src_id,status"},
		{e.do("GET", base+"?fields=name,email&exclude=email", nil, own).status(200), "data.0", "_links,id,name"},
		{e.do("GET", base+"/1?fields=phone", nil, own).status(200), "", "_links,id,phone"},
		{e.do("POST", base, map[string]any{"name": "Bo", "email": "bo@example.com"}, own, header{"X-Return-Fields": "id"}).status(201), "", "_links,id"},
		{e.do("PATCH", base+"/1", map[string]any{"status": "inactive"}, own, header{"X-Return-Fields": "status,version"}).status(200), "", "_links,id,status,version"},
	} {
		if got := keys(tc.r, tc.path); got != tc.want {
			t.Errorf("%s: fields %s, want %s", tc.r.req, got, tc.want)
		}
	}
	if r := e.do("GET", base+"/1?fields=phone", nil, own).status(200); r.str("phone") != "+14155550101" || r.str("_links.self") != base+"/1" {
		t.Errorf("narrowed read: %s", r.Body)
	}
	e.do("GET", base+"?fields=name&exclude=name", nil, own).apiError(400, "VALIDATION_ERROR", "query.exclude", "nothing_selected")
	e.do("GET", base+"?exclude=id", nil, own).apiError(400, "VALIDATION_ERROR", "query.exclude", "key_required")
	e.do("GET", base+"?fields=name,nope", nil, own).apiError(400, "VALIDATION_ERROR", "query.fields", "unknown_field")
}

// TestRecordJSONPatchNulls: a field whose value is null is a member of the record's document
// (RFC 6902): replace and remove find it, test compares with it, and a replace may set a
// nullable column to null. A location the record does not have stays an error, tests
// included (RFC 6902 §5), whatever the value compared.
func TestRecordJSONPatchNulls(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.uploadAndCreateWith(e.ownerToken, "Tiers", "tiers.csv", "name,score,tier,meta\nAnn,,,\nBob,5,gold,\nCy,,,\"{\"\"city\"\":\"\"Oslo\"\",\"\"floor\"\":null}\"\n",
		map[string]any{"schema": map[string]any{"columns": []any{
			map[string]any{"name": "name", "type": "text", "required": true},
			map[string]any{"name": "score", "type": "integer"},
			map[string]any{"name": "tier", "type": "text"},
			map[string]any{"name": "meta", "type": "jsonb"},
		}}})
	if d := e.waitDataset(e.ownerToken, id); d.str("status") != "active" {
		t.Fatalf("dataset: %s", d.Body)
	}
	base := "/api/v1/datasets/" + id + "/data/"
	jp := func(rec, ops string) *resp {
		return e.do("PATCH", base+rec, ops, own, header{"Content-Type": "application/json-patch+json"})
	}
	if r := jp("1", `[{"op":"replace","path":"/score","value":7}]`).status(200); r.num("score") != 7 || r.get("tier") != nil {
		t.Fatalf("replace of a null: %s", r.Body)
	}
	if r := jp("3", `[{"op":"remove","path":"/tier"}]`).status(200); r.get("tier") != nil || r.str("name") != "Cy" || r.num("version") != 2 {
		t.Fatalf("remove of a null: %s", r.Body)
	}
	if r := jp("2", `[{"op":"replace","path":"/score","value":null}]`).status(200); r.get("score") != nil || r.str("tier") != "gold" {
		t.Fatalf("replace with null: %s", r.Body)
	}
	if r := jp("1", `[{"op":"test","path":"/tier","value":null},{"op":"replace","path":"/tier","value":"silver"}]`).status(200); r.str("tier") != "silver" {
		t.Fatalf("test against null: %s", r.Body)
	}
	if r := jp("2", `[{"op":"test","path":"/score","value":null},{"op":"add","path":"/score","value":null}]`).status(200); r.get("score") != nil {
		t.Fatalf("add of null: %s", r.Body)
	}
	// Inside a JSON field too.
	if r := jp("3", `[{"op":"test","path":"/meta/floor","value":null},{"op":"replace","path":"/meta/floor","value":2},{"op":"remove","path":"/meta/city"}]`).status(200); r.num("meta.floor") != 2 || r.get("meta.city") != nil {
		t.Fatalf("null inside a JSON field: %s", r.Body)
	}
	// A test that does not hold: null against a value, a value against null.
	jp("1", `[{"op":"test","path":"/tier","value":null}]`).apiError(409, "PATCH_TEST_FAILED")
	jp("3", `[{"op":"test","path":"/score","value":0}]`).apiError(409, "PATCH_TEST_FAILED")
	// Not a column at all (or not one a patch reaches): an error, whatever the operation.
	before := e.do("GET", base+"3", nil, own).status(200)
	for _, ops := range []string{
		`[{"op":"replace","path":"/nope","value":1}]`,
		`[{"op":"replace","path":"/nope","value":null}]`,
		`[{"op":"remove","path":"/nope"}]`,
		`[{"op":"test","path":"/nope","value":null}]`,
		`[{"op":"test","path":"/nope","value":1}]`,
		`[{"op":"test","path":"/version","value":null}]`,
		`[{"op":"test","path":"/score/x","value":null}]`,
		`[{"op":"test","path":"/meta/city","value":null}]`,
		`[{"op":"remove","path":"/meta/city"}]`,
		`[{"op":"add","path":"/nope","value":null}]`,
		`[{"op":"test","path":"/score","value":null},{"op":"test","path":"/nope","value":null},{"op":"replace","path":"/score","value":1}]`,
	} {
		jp("3", ops).apiError(400, "VALIDATION_ERROR")
	}
	if after := e.do("GET", base+"3", nil, own).status(200); after.num("version") != before.num("version") || after.get("score") != nil || after.num("meta.floor") != 2 {
		t.Fatalf("a refused patch changed the record: %s", after.Body)
	}
	// A column that takes no null still refuses one.
	jp("3", `[{"op":"replace","path":"/name","value":null}]`).apiError(400, "VALIDATION_ERROR")
}
