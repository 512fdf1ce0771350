package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"dataplatform/cmd/dataplatform/config"
)

// nlFixture is a project with the customer and orders datasets the natural-language test
// asks about: orders.customer_id refers to customers.id (an inferred relationship). A few
// orders are dated relative to today for the relative time phrases.
func nlFixture(t *testing.T, opts ...option) *env {
	// Each question and its hand-written SQL are executions: more than the 100 a minute.
	e := newEnv(t, append(opts, func(c *config.Config) { c.RateLimits = "queries=100000-M" })...)
	customers := e.uploadAndCreate(e.ownerToken, "Customers", "customers.csv", `id,name,email,city,country,status,tier,credit,signup_date,vip
1,Ann Lee,ann@example.com,Berlin,Germany,active,gold,120.50,2023-01-15,true
2,Bob Stone,bob@example.com,Paris,France,inactive,silver,80,2023-03-02,false
3,Cid Moss,cid@example.com,Berlin,Germany,active,bronze,15,2023-07-21,false
4,Dee Park,dee@example.com,Rome,Italy,pending,silver,,2024-01-09,false
5,Eve Hart,eve@example.com,New York,USA,active,gold,300,2024-02-14,true
6,Fay Wu,fay@example.com,Paris,France,active,bronze,42,2024-03-30,false
7,Gus Ray,gus@example.com,New York,USA,inactive,silver,65,2024-05-05,false
8,Hal Kim,hal@example.com,Madrid,Spain,active,gold,210,2024-06-01,true
9,Ivy Chen,ivy@example.com,Berlin,Germany,active,silver,95,2024-04-12,false
`)
	if d := e.waitDataset(e.ownerToken, customers); d.str("status") != "active" {
		t.Fatalf("customers: %s", d.Body)
	}
	today := time.Now().UTC()
	day := func(t time.Time) string { return t.Format(time.DateOnly) }
	lastMonth := time.Date(today.Year(), today.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, -1, 14)
	lastYear := time.Date(today.Year()-1, today.Month(), 10, 0, 0, 0, 0, time.UTC)
	orders := e.uploadAndCreate(e.ownerToken, "Orders", "orders.csv", `id,customer_id,amount,status,category,placed_at
101,1,19.90,shipped,books,2024-01-05
102,1,250.00,shipped,games,2024-02-11
103,2,12.50,cancelled,music,2024-02-20
104,3,99.99,shipped,games,2024-03-03
105,3,5.00,pending,books,2024-03-15
106,5,420.00,shipped,electronics,2024-04-01
107,5,35.00,shipped,books,2024-04-18
108,6,60.00,pending,music,2024-05-09
109,8,150.00,shipped,electronics,2024-05-25
110,8,75.50,cancelled,games,2024-06-02
111,1,8.25,shipped,music,2023-12-20
112,7,130.00,shipped,electronics,2023-11-11
113,9,44.00,shipped,books,`+day(today)+`
114,9,61.00,pending,games,`+day(lastMonth)+`
115,2,17.00,shipped,music,`+day(lastYear)+`
`)
	if d := e.waitDataset(e.ownerToken, orders); d.str("status") != "active" {
		t.Fatalf("orders: %s", d.Body)
	}
	s := e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+orders+"/schema", nil, bearer(e.ownerToken)).status(200)
	if !strings.Contains(string(s.Body), `"from_column":"customer_id"`) {
		t.Fatalf("the orders → customers relationship was not inferred: %s", s.Body)
	}
	return e
}

// resultSet is a query's rows as sorted lines (or in order, when ordered).
func resultSet(r *resp, ordered bool) []string {
	var lines []string
	for i := 0; i < r.len("results.rows"); i++ {
		var vals []string
		for j := 0; j < r.len(fmt.Sprintf("results.rows.%d", i)); j++ {
			vals = append(vals, fmt.Sprint(r.get(fmt.Sprintf("results.rows.%d.%d", i, j))))
		}
		lines = append(lines, strings.Join(vals, "|"))
	}
	if !ordered {
		slices.Sort(lines)
	}
	return lines
}

// TestNaturalLanguageQuestions asks questions in plain English and checks each answer
// against the rows of hand-written SQL over the same datasets (not against the engine's SQL
// text).
func TestNaturalLanguageQuestions(t *testing.T) {
	t.Parallel()
	e := nlFixture(t)
	recent := `placed_at > current_date - 30 AND placed_at <= current_date`
	lastMonth := `placed_at >= date_trunc('month', current_date) - interval '1 month' AND placed_at < date_trunc('month', current_date)`
	cases := []struct {
		q, sql  string
		ordered bool
	}{
		// counts
		{"How many customers are there?", `SELECT count(*) FROM customers`, false},
		{"How many orders?", `SELECT count(*) FROM orders`, false},
		{"How many customers live in Berlin?", `SELECT count(*) FROM customers WHERE city = 'Berlin'`, false},
		{"number of customers in Paris", `SELECT count(*) FROM customers WHERE city = 'Paris'`, false},
		{"count customers from New York", `SELECT count(*) FROM customers WHERE city = 'New York'`, false},
		{"how many customers in berln", `SELECT count(*) FROM customers WHERE city = 'Berlin'`, false},
		{"How many active customers?", `SELECT count(*) FROM customers WHERE status = 'active'`, false},
		{"how many gold customers", `SELECT count(*) FROM customers WHERE tier = 'gold'`, false},
		{"how many vip customers", `SELECT count(*) FROM customers WHERE vip`, false},
		{"how many customers are not vip", `SELECT count(*) FROM customers WHERE NOT vip`, false},
		{"How many distinct cities do customers live in?", `SELECT count(DISTINCT city) FROM customers`, false},
		{"how many different countries", `SELECT count(DISTINCT country) FROM customers`, false},
		{"how many orders over 100", `SELECT count(*) FROM orders WHERE amount > 100`, false},
		{"how many pending orders", `SELECT count(*) FROM orders WHERE status = 'pending'`, false},
		{"how many cancelled orders in 2024", `SELECT count(*) FROM orders WHERE status = 'cancelled' AND placed_at >= '2024-01-01' AND placed_at < '2025-01-01'`, false},
		{"how many customers except inactive ones", `SELECT count(*) FROM customers WHERE status IS DISTINCT FROM 'inactive'`, false},
		// sums, averages, extremes
		{"total order amount", `SELECT sum(amount) FROM orders`, false},
		{"total revenue", `SELECT sum(amount) FROM orders`, false},
		{"average order amount", `SELECT avg(amount) FROM orders`, false},
		{"average credit of customers", `SELECT avg(credit) FROM customers`, false},
		{"maximum credit", `SELECT max(credit) FROM customers`, false},
		{"minimum order amount", `SELECT min(amount) FROM orders`, false},
		{"what is the highest order amount", `SELECT max(amount) FROM orders`, false},
		{"what is the lowest credit", `SELECT min(credit) FROM customers`, false},
		{"average credit of active customers in Berlin", `SELECT avg(credit) FROM customers WHERE status = 'active' AND city = 'Berlin'`, false},
		// rows and filters
		{"customers in Berlin", `SELECT * FROM customers WHERE city = 'Berlin'`, false},
		{"list customers in Paris or Rome", `SELECT * FROM customers WHERE city IN ('Paris', 'Rome')`, false},
		{"customers not in Berlin", `SELECT * FROM customers WHERE city IS DISTINCT FROM 'Berlin'`, false},
		{"orders over 100", `SELECT * FROM orders WHERE amount > 100`, false},
		{"orders under 20", `SELECT * FROM orders WHERE amount < 20`, false},
		{"orders of at least 150", `SELECT * FROM orders WHERE amount >= 150`, false},
		{"orders between 50 and 150", `SELECT * FROM orders WHERE amount BETWEEN 50 AND 150`, false},
		{"customers with credit above 100", `SELECT * FROM customers WHERE credit > 100`, false},
		{"shipped orders", `SELECT * FROM orders WHERE status = 'shipped'`, false},
		{"orders sorted by amount", `SELECT * FROM orders ORDER BY amount`, true},
		{"customers in Germany sorted by credit descending", `SELECT * FROM customers WHERE country = 'Germany' ORDER BY credit DESC NULLS LAST`, true},
		// grouping
		{"total amount by category", `SELECT category, sum(amount) FROM orders GROUP BY 1`, false},
		{"revenue per category", `SELECT category, sum(amount) FROM orders GROUP BY 1`, false},
		{"average credit by city", `SELECT city, avg(credit) FROM customers GROUP BY 1`, false},
		{"number of customers per country", `SELECT country, count(*) FROM customers GROUP BY 1`, false},
		{"how many orders by status", `SELECT status, count(*) FROM orders GROUP BY 1`, false},
		{"for each tier, the average credit", `SELECT tier, avg(credit) FROM customers GROUP BY 1`, false},
		{"orders by month", `SELECT date_trunc('month', placed_at)::date, count(*) FROM orders GROUP BY 1`, false},
		{"revenue by month in 2024", `SELECT date_trunc('month', placed_at)::date, sum(amount) FROM orders WHERE placed_at >= '2024-01-01' AND placed_at < '2025-01-01' GROUP BY 1`, false},
		{"monthly revenue in 2024", `SELECT date_trunc('month', placed_at)::date, sum(amount) FROM orders WHERE placed_at >= '2024-01-01' AND placed_at < '2025-01-01' GROUP BY 1`, false},
		{"number of customers by signup year", `SELECT date_trunc('year', signup_date)::date, count(*) FROM customers GROUP BY 1`, false},
		{"total shipped amount per category", `SELECT category, sum(amount) FROM orders WHERE status = 'shipped' GROUP BY 1`, false},
		// top N and superlatives
		{"top 3 customers by credit", `SELECT * FROM customers ORDER BY credit DESC NULLS LAST LIMIT 3`, true},
		{"top 2 categories by revenue", `SELECT category, sum(amount) FROM orders GROUP BY 1 ORDER BY 2 DESC LIMIT 2`, true},
		{"which city has the most customers", `SELECT city, count(*) FROM customers GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1`, true},
		{"which customer has the highest credit", `SELECT * FROM customers ORDER BY credit DESC NULLS LAST LIMIT 1`, true},
		{"which customer has the lowest credit", `SELECT * FROM customers ORDER BY credit ASC NULLS LAST LIMIT 1`, true},
		{"which category has the highest revenue", `SELECT category, sum(amount) FROM orders GROUP BY 1 ORDER BY 2 DESC LIMIT 1`, true},
		// time
		{"orders in 2024", `SELECT * FROM orders WHERE placed_at >= '2024-01-01' AND placed_at < '2025-01-01'`, false},
		{"how many orders in 2023", `SELECT count(*) FROM orders WHERE placed_at >= '2023-01-01' AND placed_at < '2024-01-01'`, false},
		{"revenue in March 2024", `SELECT sum(amount) FROM orders WHERE placed_at >= '2024-03-01' AND placed_at < '2024-04-01'`, false},
		{"orders between March and May 2024", `SELECT * FROM orders WHERE placed_at >= '2024-03-01' AND placed_at < '2024-06-01'`, false},
		{"how many orders between march and may", `SELECT count(*) FROM orders WHERE extract(month FROM placed_at) BETWEEN 3 AND 5`, false},
		{"orders last month", `SELECT * FROM orders WHERE ` + lastMonth, false},
		{"how many orders this year", `SELECT count(*) FROM orders WHERE placed_at >= date_trunc('year', current_date)`, false},
		{"revenue in the last 30 days", `SELECT sum(amount) FROM orders WHERE ` + recent, false},
		{"orders since 2024-04-01", `SELECT * FROM orders WHERE placed_at >= '2024-04-01'`, false},
		{"orders before 2024", `SELECT * FROM orders WHERE placed_at < '2024-01-01'`, false},
		{"customers who signed up after 2023", `SELECT * FROM customers WHERE signup_date >= '2024-01-01'`, false},
		// across the relationship
		{"average order amount for gold customers", `SELECT avg(o.amount) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.tier = 'gold'`, false},
		{"total revenue by customer city", `SELECT c.city, sum(o.amount) FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY 1`, false},
		{"revenue from customers in Berlin", `SELECT sum(o.amount) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.city = 'Berlin'`, false},
		{"number of orders per customer name", `SELECT c.id, c.name, count(*) FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY 1, 2`, false},
		{"top 3 cities by revenue", `SELECT c.city, sum(o.amount) FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY 1 ORDER BY 2 DESC LIMIT 3`, true},
		{"customers with more than 1 order", `SELECT * FROM customers c WHERE (SELECT count(*) FROM orders o WHERE o.customer_id = c.id) > 1`, false},
		{"how many customers have orders over 100", `SELECT count(*) FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id AND o.amount > 100)`, false},
	}
	if len(cases) < 60 {
		t.Fatalf("only %d questions", len(cases))
	}
	failed := 0
	for _, tc := range cases {
		got := e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", map[string]any{"query": tc.q}, bearer(e.ownerToken))
		if got.Code != 200 {
			t.Errorf("%q: %d %s", tc.q, got.Code, got.Body)
			failed++
			continue
		}
		want := e.execute(map[string]any{"query": tc.sql}, e.ownerToken).status(200)
		g, w := resultSet(got, tc.ordered), resultSet(want, tc.ordered)
		if !slices.Equal(g, w) {
			t.Errorf("%q:\n  read as %s\n  %v\n  got  %v\n  want %v", tc.q, got.str("generated_sql"), got.get("explanation.steps"), g, w)
			failed++
		}
	}
	t.Logf("%d of %d questions answered as the hand-written SQL", len(cases)-failed, len(cases))
	// What it cannot read, it says so, with suggestions.
	for _, q := range []string{"what is the weather in Paris?", "tell me a joke", "average amount of orders by colour", "orders with more than 2 widgets"} {
		r := e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", map[string]any{"query": q}, bearer(e.ownerToken)).apiError(400, "INVALID_QUERY")
		if r.len("error.details.suggestions") == 0 || r.str("error.details.reason") == "" {
			t.Errorf("%q: %s", q, r.Body)
		}
	}
}

// TestNaturalLanguagePicksDatasetsWithTheSearchIndex: a question that names no dataset,
// column or value is matched against the datasets' descriptions in the search index.
func TestNaturalLanguagePicksDatasetsWithTheSearchIndex(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.uploadAndCreateWith(e.ownerToken, "Tickets", "t.csv", "subject,hours\nlogin,2\nbilling,5\n", map[string]any{"description": "support requests from clients"})
	b := e.uploadAndCreateWith(e.ownerToken, "Shipments", "s.csv", "carrier,weight\nups,2\ndhl,3\nfedex,1\n", map[string]any{"description": "parcels sent to clients"})
	for _, id := range []string{a, b} {
		e.waitDataset(e.ownerToken, id)
	}
	r := e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", map[string]any{"query": "how many parcels were sent?"}, bearer(e.ownerToken)).status(200)
	// The pick is an assumption: said in the steps and the warnings, with the words it took
	// as describing the dataset.
	if rows(r) != "3" || r.str("explanation.datasets_used.0.id") != b || !strings.Contains(fmt.Sprint(r.get("explanation.steps")), "search index") ||
		!strings.Contains(fmt.Sprint(r.get("warnings")), "search index") {
		t.Fatalf("picked by description: %s", r.Body)
	}
	// Only the words the dataset's entries match are accounted for by the pick: "damaged" is
	// nothing of the shipments, so the count of all parcels would answer another question.
	r = e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", map[string]any{"query": "how many parcels were damaged?"}, bearer(e.ownerToken)).
		apiError(400, "INVALID_QUERY")
	if !strings.Contains(string(r.Body), `damaged`) {
		t.Fatalf("the refusal should name the word: %s", r.Body)
	}
	r = e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", map[string]any{"query": "how many support requests?"}, bearer(e.ownerToken)).status(200)
	if rows(r) != "2" || r.str("explanation.datasets_used.0.id") != a {
		t.Fatalf("picked by description: %s", r.Body)
	}
	// The index also gives the values: "ups" is a carrier.
	if r := e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", map[string]any{"query": "total weight of shipments by ups"},
		bearer(e.ownerToken)).status(200); rows(r) != "2" {
		t.Fatalf("value from the index: %s", r.Body)
	}
	d := e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+b, nil, bearer(e.ownerToken)).status(200)
	if d.num("metadata.vector_count") < 5 {
		t.Fatalf("vector_count: %s", d.Body)
	}
}

// TestNaturalLanguageWithAModel: with DP_LLM_* set, a model server (started here, speaking
// the OpenAI chat completions API) writes the SQL; its SQL goes through the same checks and
// a planner dry run, and when it fails or is refused the built-in engine answers with a
// warning.
func TestNaturalLanguageWithAModel(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var answer string // what the model says next; "" = fail with 500
	var prompts []string
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role, Content string
			} `json:"messages"`
		}
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer model-key" || json.NewDecoder(r.Body).Decode(&req) != nil ||
			req.Model != "sql-model" || len(req.Messages) != 2 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		prompts = append(prompts, req.Messages[1].Content)
		if answer == "" {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": answer}}}})
	}))
	defer model.Close()
	e := nlFixture(t, func(c *config.Config) {
		c.LLMBaseURL, c.LLMAPIKey, c.LLMModel = model.URL+"/v1", "model-key", "sql-model"
	})
	ask := func(a string) *resp {
		mu.Lock()
		answer = a
		mu.Unlock()
		return e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", map[string]any{"query": "how many customers in Paris"}, bearer(e.ownerToken)).status(200)
	}
	// The model's SQL runs (it counts Berlin, so the answer shows whose SQL ran).
	r := ask("```sql\nSELECT count(*) FROM customers c JOIN orders o ON o.customer_id = c.id WHERE c.city = 'Berlin';\n```")
	if rows(r) != "7" || r.get("warnings") != nil || !strings.Contains(r.str("explanation.summary"), "sql-model") {
		t.Fatalf("the model's SQL: %s", r.Body)
	}
	mu.Lock()
	p := prompts[0]
	mu.Unlock()
	for _, want := range []string{"customers", "orders", "city text", "Berlin", "orders.customer_id references customers.id", "Question: how many customers in Paris"} {
		if !strings.Contains(p, want) {
			t.Fatalf("the prompt lacks %q:\n%s", want, p)
		}
	}
	// Refused, failing the dry run, or no answer: the built-in engine answers (Paris: 2).
	for _, a := range []string{"DELETE FROM customers", "SELECT nope FROM customers", "SELECT * FROM pg_catalog.pg_authid", "WITH x AS (DELETE FROM orders RETURNING 1) SELECT 1", ""} {
		r := ask(a)
		if rows(r) != "2" || r.len("warnings") != 1 || !strings.Contains(r.str("warnings.0"), "built-in engine") {
			t.Fatalf("model answer %q: %s", a, r.Body)
		}
	}
	if n := e.countRows(`SELECT count(*) FROM "` + e.orgID + `"."` + e.datasetID("Customers") + `" WHERE deleted_at IS NULL`); n != 9 {
		t.Fatalf("the model's DELETE changed data: %d customers", n)
	}
}

// countRows runs a count on the database.
func (e *env) countRows(sql string) int {
	e.t.Helper()
	var n int
	if err := e.st.DB.Get(&n, sql); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// datasetID is the id of the project's dataset of that name.
func (e *env) datasetID(name string) string {
	e.t.Helper()
	var id string
	if err := e.st.DB.Get(&id, `SELECT id FROM platform.datasets WHERE project_id = $1 AND name = $2`, e.projectID, name); err != nil {
		e.t.Fatal(err)
	}
	return id
}

// TestNaturalLanguageEngineSQLDryRun: SQL the engine wrote that PostgreSQL rejects (here the
// dataset's table lost a column behind the platform's back, so the engine's schema is stale)
// is refused as the engine's failure, before it runs, and PostgreSQL's message about SQL the
// user did not write is not shown.
func TestNaturalLanguageEngineSQLDryRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.uploadAndCreate(e.ownerToken, "Customers", "c.csv", "name,city\nAnn,Berlin\nBob,Paris\nCid,Berlin\n")
	e.waitDataset(e.ownerToken, id)
	ask := func() *resp {
		return e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", map[string]any{"query": "how many customers in each city?"}, bearer(e.ownerToken))
	}
	if r := ask().status(200); rows(r) != "Berlin|2\nParis|1" && rows(r) != "Paris|1\nBerlin|2" {
		t.Fatalf("before: %s", r.Body)
	}
	if _, err := e.st.DB.Exec(`ALTER TABLE "` + e.orgID + `"."` + id + `" DROP COLUMN city`); err != nil {
		t.Fatal(err)
	}
	r := ask().apiError(400, "INVALID_QUERY")
	if r.str("error.details.reason") != "the engine's SQL failed the planner's dry run" || strings.Contains(string(r.Body), "does not exist") {
		t.Fatalf("after the column went: %s", r.Body)
	}
}
