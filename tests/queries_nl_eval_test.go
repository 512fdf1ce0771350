package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"dataplatform/cmd/dataplatform/config"
)

// nlEval is a question and the hand-written SQL whose rows answer it (ordered when the
// order is part of the answer). A question with no SQL has no right answer on its schema
// (a word of it is no column, value or dataset): the engine must refuse it.
type nlEval struct {
	q, sql  string
	ordered bool
}

// nlSchema is a project of datasets (testdata/nl/<dir>/<file>.csv, in order: referenced
// datasets first, so that the relationships are inferred) and its questions.
type nlSchema struct {
	name, dir string
	datasets  []string // display names; files are their lower-case names
	questions []nlEval
	more      func(t *testing.T, e *env) // what else to check of the answers on the schema
}

// TestNLEvaluation asks every question of four unrelated schemas (a shop, an HR
// department, sensors with timestamped readings, a school whose students and courses meet
// through enrollments) and judges each answer against the rows of
// its hand-written SQL: answered correctly, refused (400 INVALID_QUERY), or answered wrong
// (200 with other rows, or an answer to a question that has none). It prints the table per
// schema and fails on any wrong answer, and when fewer than 90% of the questions that have
// an answer are answered correctly.
//
//	go test -count=1 -run TestNLEvaluation -v ./tests/
func TestNLEvaluation(t *testing.T) {
	t.Parallel()
	schemas := []nlSchema{shopEval(), hrEval(), sensorsEval(), schoolEval()}
	type tally struct{ correct, refused, noAnswer, wrong int }
	results := make([]tally, len(schemas))
	var mu sync.Mutex
	var report []string
	t.Run("schemas", func(t *testing.T) {
		for si, sc := range schemas {
			t.Run(sc.name, func(t *testing.T) {
				t.Parallel()
				e := newEnv(t, func(c *config.Config) { c.RateLimits = "queries=100000-M" })
				for _, name := range sc.datasets {
					file := strings.ToLower(name) + ".csv"
					b, err := os.ReadFile(filepath.Join("testdata", "nl", sc.dir, file))
					if err != nil {
						t.Fatal(err)
					}
					id := e.uploadAndCreate(e.ownerToken, name, file, string(b))
					if d := e.waitDataset(e.ownerToken, id); d.str("status") != "active" {
						t.Fatalf("%s: %s", name, d.Body)
					}
				}
				if sc.more != nil {
					sc.more(t, e)
				}
				var tl tally
				var lines []string
				for _, c := range sc.questions {
					got := e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", map[string]any{"query": c.q}, bearer(e.ownerToken))
					switch {
					case got.Code == 400 && got.str("error.code") == "INVALID_QUERY":
						if got.len("error.details.suggestions") == 0 || got.str("error.details.reason") == "" {
							t.Errorf("%q: a refusal without reason or suggestions: %s", c.q, got.Body)
						}
						tl.refused++
						if c.sql == "" {
							tl.noAnswer++
						}
						lines = append(lines, fmt.Sprintf("  refused  %q: %s", c.q, got.str("error.details.reason")))
					case got.Code != 200:
						t.Errorf("%q: %d %s", c.q, got.Code, got.Body)
						tl.wrong++
					case c.sql == "":
						t.Errorf("%q has no answer on this schema, yet was answered: %s", c.q, got.str("generated_sql"))
						tl.wrong++
					default:
						want := e.execute(map[string]any{"query": c.sql}, e.ownerToken).status(200)
						g, w := resultSet(got, c.ordered), resultSet(want, c.ordered)
						if slices.Equal(g, w) {
							tl.correct++
							continue
						}
						tl.wrong++
						t.Errorf("%q answered wrong:\n  read as %s\n  steps %v\n  got  %v\n  want %v", c.q, got.str("generated_sql"), got.get("explanation.steps"), g, w)
					}
				}
				mu.Lock()
				results[si] = tl
				report = append(report, fmt.Sprintf("%s refusals:\n%s", sc.name, strings.Join(lines, "\n")))
				mu.Unlock()
			})
		}
	})
	var all tally
	var b strings.Builder
	line := func(name string, n int, r tally) {
		fmt.Fprintf(&b, "%-10s %9d %8d %8d %9d %6d %10.1f%%\n", name, n, r.correct, r.refused, r.noAnswer, r.wrong, 100*float64(r.correct)/float64(max(1, n-r.noAnswer)))
	}
	fmt.Fprintf(&b, "\n%-10s %9s %8s %8s %9s %6s %11s\n", "schema", "questions", "correct", "refused", "no-answer", "wrong", "correct/answerable")
	n := 0
	for i, sc := range schemas {
		r := results[i]
		all.correct, all.refused, all.noAnswer, all.wrong = all.correct+r.correct, all.refused+r.refused, all.noAnswer+r.noAnswer, all.wrong+r.wrong
		n += len(sc.questions)
		line(sc.name, len(sc.questions), r)
	}
	line("all", n, all)
	b.WriteString("(refused counts every 400 INVALID_QUERY; no-answer: the refused questions that have no answer on their schema, refused rightly)\n")
	slices.Sort(report)
	t.Log(b.String() + "\n" + strings.Join(report, "\n"))
	if n < 200 {
		t.Errorf("only %d questions", n)
	}
	if all.wrong > 0 {
		t.Errorf("%d question(s) answered wrong", all.wrong)
	}
	if answerable := n - all.noAnswer; float64(all.correct) < 0.9*float64(answerable) {
		t.Errorf("%d of %d answerable questions answered correctly: under 90%%", all.correct, answerable)
	}
}

func shopEval() nlSchema {
	byCustomer := `SELECT c.id, c.name, sum(o.amount) FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY 1, 2`
	withZero := `SELECT c.id, c.name, coalesce(sum(o.amount), 0) FROM customers c LEFT JOIN orders o ON o.customer_id = c.id GROUP BY 1, 2`
	return nlSchema{name: "shop", dir: "shop", datasets: []string{"Customers", "Orders"}, more: shopAnswers, questions: []nlEval{
		// counts, filters, booleans
		{q: "How many customers are there?", sql: `SELECT count(*) FROM customers`},
		{q: "How many orders?", sql: `SELECT count(*) FROM orders`},
		{q: "How many customers in Austin?", sql: `SELECT count(*) FROM customers WHERE city = 'Austin'`},
		{q: "How many customers are vip?", sql: `SELECT count(*) FROM customers WHERE is_vip`},
		{q: "how many vip customers", sql: `SELECT count(*) FROM customers WHERE is_vip`},
		{q: "how many non-vip customers", sql: `SELECT count(*) FROM customers WHERE NOT is_vip`},
		{q: "How many customers are not vip?", sql: `SELECT count(*) FROM customers WHERE NOT is_vip`},
		{q: "number of customers in Texas", sql: `SELECT count(*) FROM customers WHERE state = 'Texas'`},
		{q: "how many active customers", sql: `SELECT count(*) FROM customers WHERE status = 'active'`},
		{q: "how many inactive customers", sql: `SELECT count(*) FROM customers WHERE status = 'inactive'`},
		{q: "how many customers in Austin or Dallas", sql: `SELECT count(*) FROM customers WHERE city IN ('Austin', 'Dallas')`},
		{q: "customers in Boston", sql: `SELECT * FROM customers WHERE city = 'Boston'`},
		{q: "vip customers in Texas", sql: `SELECT * FROM customers WHERE is_vip AND state = 'Texas'`},
		{q: "customers that are vip", sql: `SELECT * FROM customers WHERE is_vip`},
		{q: "non-vip customers", sql: `SELECT * FROM customers WHERE NOT is_vip`},
		{q: "customers with credit over 100", sql: `SELECT * FROM customers WHERE credit > 100`},
		{q: "how many customers with credit between 50 and 300", sql: `SELECT count(*) FROM customers WHERE credit BETWEEN 50 AND 300`},
		{q: "how many orders over 100", sql: `SELECT count(*) FROM orders WHERE amount > 100`},
		{q: "web orders", sql: `SELECT * FROM orders WHERE channel = 'web'`},
		{q: "how many web orders", sql: `SELECT count(*) FROM orders WHERE channel = 'web'`},
		{q: "orders not in web", sql: `SELECT * FROM orders WHERE channel IS DISTINCT FROM 'web'`},
		{q: "total quantity of books orders", sql: `SELECT sum(quantity) FROM orders WHERE category = 'books'`},
		{q: "orders sorted by amount descending", sql: `SELECT * FROM orders ORDER BY amount DESC`, ordered: true},
		// distinct counts
		{q: "How many distinct cities?", sql: `SELECT count(DISTINCT city) FROM customers`},
		{q: "how many different states do customers live in", sql: `SELECT count(DISTINCT state) FROM customers`},
		{q: "how many cities", sql: `SELECT count(DISTINCT city) FROM customers`},
		{q: "number of distinct channels", sql: `SELECT count(DISTINCT channel) FROM orders`},
		{q: "How many distinct customers placed orders?", sql: `SELECT count(DISTINCT customer_id) FROM orders`},
		// grouping
		{q: "How many customers in each state?", sql: `SELECT state, count(*) FROM customers GROUP BY 1`},
		{q: "How many customers per city", sql: `SELECT city, count(*) FROM customers GROUP BY 1`},
		{q: "How many orders did each city place?", sql: `SELECT c.city, count(*) FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY 1`},
		{q: "how many orders by channel", sql: `SELECT channel, count(*) FROM orders GROUP BY 1`},
		{q: "orders by customer city", sql: `SELECT c.city, count(*) FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY 1`},
		{q: "total amount by customer state", sql: `SELECT c.state, sum(o.amount) FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY 1`},
		{q: "revenue by category and channel", sql: `SELECT category, channel, sum(amount) FROM orders GROUP BY 1, 2`},
		{q: "number of orders by category and channel", sql: `SELECT category, channel, count(*) FROM orders GROUP BY 1, 2`},
		{q: "total amount by channel", sql: `SELECT channel, sum(amount) FROM orders GROUP BY 1`},
		{q: "average credit by state", sql: `SELECT state, avg(credit) FROM customers GROUP BY 1`},
		{q: "total credit by status", sql: `SELECT status, sum(credit) FROM customers GROUP BY 1`},
		{q: "for every channel, the average order amount", sql: `SELECT channel, avg(amount) FROM orders GROUP BY 1`},
		{q: "revenue by month in 2024", sql: `SELECT date_trunc('month', order_date)::date, sum(amount) FROM orders WHERE order_date >= '2024-01-01' AND order_date < '2025-01-01' GROUP BY 1`},
		{q: "number of customers by signup year", sql: `SELECT date_trunc('year', signup_date)::date, count(*) FROM customers GROUP BY 1`},
		// per-entity aggregates
		{q: "Total order amount per customer", sql: byCustomer},
		{q: "total amount of orders for each customer", sql: byCustomer},
		{q: "number of orders per customer", sql: `SELECT c.id, c.name, count(*) FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY 1, 2`},
		{q: "average order amount per customer", sql: `SELECT c.id, c.name, avg(o.amount) FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY 1, 2`},
		{q: "revenue by customer name", sql: byCustomer},
		{q: "Top 5 customers by total order amount", sql: byCustomer + ` ORDER BY 3 DESC LIMIT 5`, ordered: true},
		{q: "Top 5 customers by order amount", sql: byCustomer + ` ORDER BY 3 DESC LIMIT 5`, ordered: true},
		{q: "Top 5 customer names by total order amount", sql: byCustomer + ` ORDER BY 3 DESC LIMIT 5`, ordered: true},
		// customers without orders have the lowest totals (0): a join of orders alone would leave them out
		{q: "bottom 2 customers by total order amount", sql: withZero + ` ORDER BY 3 ASC, 1 LIMIT 2`, ordered: true},
		{q: "Which customer has the highest total order amount?", sql: byCustomer + ` ORDER BY 3 DESC LIMIT 1`, ordered: true},
		{q: "which customer has the lowest total order amount", sql: withZero + ` ORDER BY 3 ASC, 1 LIMIT 1`, ordered: true},
		{q: "which customer spent the most", sql: byCustomer + ` ORDER BY 3 DESC LIMIT 1`, ordered: true},
		{q: "which customer spent the least", sql: withZero + ` ORDER BY 3 ASC, 1 LIMIT 1`, ordered: true},
		{q: "which customer has the most orders", sql: `SELECT c.id, c.name, count(*) FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 1`, ordered: true},
		{q: "which customer has the fewest orders", sql: `SELECT c.id, c.name, count(o.id) FROM customers c LEFT JOIN orders o ON o.customer_id = c.id GROUP BY 1, 2 ORDER BY 3 ASC, 1 LIMIT 1`, ordered: true},
		{q: "top 3 customers by number of orders", sql: `SELECT c.id, c.name, count(*) FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY 1, 2 ORDER BY 3 DESC, 1 LIMIT 3`, ordered: true},
		{q: "Top 3 customers by credit", sql: `SELECT * FROM customers ORDER BY credit DESC LIMIT 3`, ordered: true},
		{q: "which customer has the highest credit", sql: `SELECT * FROM customers ORDER BY credit DESC LIMIT 1`, ordered: true},
		{q: "which state has the most customers", sql: `SELECT state, count(*) FROM customers GROUP BY 1 ORDER BY 2 DESC LIMIT 1`, ordered: true},
		{q: "which channel has the highest revenue", sql: `SELECT channel, sum(amount) FROM orders GROUP BY 1 ORDER BY 2 DESC LIMIT 1`, ordered: true},
		{q: "which category has the most orders", sql: `SELECT category, count(*) FROM orders GROUP BY 1 ORDER BY 2 DESC LIMIT 1`, ordered: true},
		{q: "top 2 channels by revenue", sql: `SELECT channel, sum(amount) FROM orders GROUP BY 1 ORDER BY 2 DESC LIMIT 2`, ordered: true},
		{q: "bottom 2 categories by revenue", sql: `SELECT category, sum(amount) FROM orders GROUP BY 1 ORDER BY 2 ASC LIMIT 2`, ordered: true},
		// related rows: existence, counts, anti-joins
		{q: "how many customers placed orders", sql: `SELECT count(*) FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id)`},
		{q: "how many customers have orders", sql: `SELECT count(*) FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id)`},
		{q: "How many customers never placed an order?", sql: `SELECT count(*) FROM customers c WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id)`},
		{q: "Customers who never placed an order", sql: `SELECT * FROM customers c WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id)`},
		{q: "customers without orders", sql: `SELECT * FROM customers c WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id)`},
		{q: "customers with no orders", sql: `SELECT * FROM customers c WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id)`},
		{q: "customers who have not placed any orders in 2024", sql: `SELECT * FROM customers c WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id AND o.order_date >= '2024-01-01' AND o.order_date < '2025-01-01')`},
		{q: "customers with more than 2 orders", sql: `SELECT * FROM customers c WHERE (SELECT count(*) FROM orders o WHERE o.customer_id = c.id) > 2`},
		{q: "customers with at least 2 orders", sql: `SELECT * FROM customers c WHERE (SELECT count(*) FROM orders o WHERE o.customer_id = c.id) >= 2`},
		{q: "how many customers have more than 1 order", sql: `SELECT count(*) FROM customers c WHERE (SELECT count(*) FROM orders o WHERE o.customer_id = c.id) > 1`},
		{q: "how many customers have orders over 100", sql: `SELECT count(*) FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id AND o.amount > 100)`},
		// across the relationship
		{q: "how many orders from vip customers", sql: `SELECT count(*) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.is_vip`},
		{q: "Total amount of orders from vip customers", sql: `SELECT sum(o.amount) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.is_vip`},
		{q: "how many orders did vip customers place", sql: `SELECT count(*) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.is_vip`},
		{q: "average order amount for vip customers", sql: `SELECT avg(o.amount) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.is_vip`},
		{q: "total amount of orders from customers in Texas", sql: `SELECT sum(o.amount) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.state = 'Texas'`},
		{q: "orders of customers in Seattle", sql: `SELECT o.* FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.city = 'Seattle'`},
		{q: "average credit of vip customers", sql: `SELECT avg(credit) FROM customers WHERE is_vip`},
		// sums, averages, extremes
		{q: "total order amount", sql: `SELECT sum(amount) FROM orders`},
		{q: "average order amount", sql: `SELECT avg(amount) FROM orders`},
		{q: "maximum order amount", sql: `SELECT max(amount) FROM orders`},
		{q: "minimum credit", sql: `SELECT min(credit) FROM customers`},
		{q: "Average quantity per order by channel", sql: `SELECT channel, avg(quantity) FROM orders GROUP BY 1`},
		{q: "average quantity per order", sql: `SELECT avg(quantity) FROM orders`},
		{q: "average number of orders per customer", sql: `SELECT avg((SELECT count(*) FROM orders o WHERE o.customer_id = c.id)) FROM customers c`},
		{q: "how many orders per customer on average", sql: `SELECT avg((SELECT count(*) FROM orders o WHERE o.customer_id = c.id)) FROM customers c`},
		// shares
		{q: "share of orders by channel", sql: `SELECT channel, count(*), round(100.0 * count(*) / sum(count(*)) OVER (), 2) FROM orders GROUP BY 1`},
		{q: "share of revenue by category", sql: `SELECT category, sum(amount), round(100.0 * sum(amount) / sum(sum(amount)) OVER (), 2) FROM orders GROUP BY 1`},
		{q: "percentage of vip customers", sql: `SELECT round(100.0 * count(*) FILTER (WHERE is_vip) / count(*), 2) FROM customers`},
		{q: "percentage of active customers", sql: `SELECT round(100.0 * count(*) FILTER (WHERE status = 'active') / count(*), 2) FROM customers`},
		// time
		{q: "orders in 2023", sql: `SELECT * FROM orders WHERE order_date >= '2023-01-01' AND order_date < '2024-01-01'`},
		{q: "how many orders in 2024", sql: `SELECT count(*) FROM orders WHERE order_date >= '2024-01-01' AND order_date < '2025-01-01'`},
		{q: "how many customers signed up in 2024", sql: `SELECT count(*) FROM customers WHERE signup_date >= '2024-01-01' AND signup_date < '2025-01-01'`},
		{q: "orders over 100 in 2024", sql: `SELECT * FROM orders WHERE amount > 100 AND order_date >= '2024-01-01' AND order_date < '2025-01-01'`},
		{q: "how many orders in March 2024", sql: `SELECT count(*) FROM orders WHERE order_date >= '2024-03-01' AND order_date < '2024-04-01'`},
		// questions that invite a wrong reading
		{q: "bottom 3 customers by number of web orders", sql: `SELECT c.id, c.name, count(o.id) FROM customers c LEFT JOIN orders o ON o.customer_id = c.id AND o.channel = 'web' GROUP BY 1, 2 ORDER BY 3, 1 LIMIT 3`, ordered: true},
		{q: "bottom 2 customers in Texas by total order amount", sql: withZero[:strings.Index(withZero, " GROUP")] + ` WHERE c.state = 'Texas' GROUP BY 1, 2 ORDER BY 3, 1 LIMIT 2`, ordered: true},
		{q: "average amount of orders by vip customers", sql: `SELECT avg(o.amount) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.is_vip`},
		{q: "average order amount by vip", sql: `SELECT c.is_vip, avg(o.amount) FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY 1`},
		{q: "customers in Austin with orders over 100", sql: `SELECT * FROM customers c WHERE city = 'Austin' AND EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id AND o.amount > 100)`},
		{q: "total amount of web orders by customer state", sql: `SELECT c.state, sum(o.amount) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.channel = 'web' GROUP BY 1`},
		{q: "how many customers in Texas placed orders", sql: `SELECT count(*) FROM customers c WHERE state = 'Texas' AND EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id)`},
		{q: "top 5 customers by quantity", sql: `SELECT c.id, c.name, sum(o.quantity) FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY 1, 2 ORDER BY 3 DESC, 1 LIMIT 5`, ordered: true},
		{q: "revenue per customer in 2024", sql: `SELECT c.id, c.name, sum(o.amount) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.order_date >= '2024-01-01' AND o.order_date < '2025-01-01' GROUP BY 1, 2`},
		{q: "average credit of customers with orders", sql: `SELECT avg(credit) FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id)`},
		{q: "how many orders per day", sql: `SELECT order_date, count(*) FROM orders GROUP BY 1`},
		{q: "how many orders per customer city and channel", sql: `SELECT c.city, o.channel, count(*) FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY 1, 2`},
		{q: "how many customers ordered books", sql: `SELECT count(*) FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id AND o.category = 'books')`},
		{q: "customers who have ordered books", sql: `SELECT * FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id AND o.category = 'books')`},
		{q: "how many orders were placed in 2024", sql: `SELECT count(*) FROM orders WHERE order_date >= '2024-01-01' AND order_date < '2025-01-01'`},
		{q: "customers who bought games", sql: `SELECT * FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id AND o.category = 'games')`},
		{q: "orders by month for vip customers", sql: `SELECT date_trunc('month', o.order_date)::date, count(*) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.is_vip GROUP BY 1`},
		{q: "customers without orders in 2024", sql: `SELECT * FROM customers c WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id AND o.order_date >= '2024-01-01' AND o.order_date < '2025-01-01')`},
		{q: "customers not vip in Austin", sql: `SELECT * FROM customers WHERE city = 'Austin' AND NOT is_vip`},
		{q: "orders with amount over 100 and quantity under 3", sql: `SELECT * FROM orders WHERE amount > 100 AND quantity < 3`},
		{q: "orders per customer", sql: `SELECT c.id, c.name, count(*) FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY 1, 2`},
		{q: "customers by number of orders", sql: `SELECT c.id, c.name, count(o.id) FROM customers c LEFT JOIN orders o ON o.customer_id = c.id GROUP BY 1, 2 ORDER BY 3 DESC, 1`, ordered: true},
		{q: "orders with amount over 100 or quantity under 3", sql: `SELECT * FROM orders WHERE amount > 100 OR quantity < 3`},
		{q: "number of orders and total amount by channel", sql: `SELECT channel, count(*), sum(amount) FROM orders GROUP BY 1`},
		{q: "most recent order", sql: `SELECT * FROM orders ORDER BY order_date DESC LIMIT 1`, ordered: true},
		{q: "latest 3 orders", sql: `SELECT * FROM orders ORDER BY order_date DESC LIMIT 3`, ordered: true},
		{q: "earliest orders in 2024", sql: `SELECT * FROM orders WHERE order_date >= '2024-01-01' ORDER BY order_date`, ordered: true},
		{q: "customers whose orders are over 100", sql: `SELECT * FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id AND o.amount > 100)`},
		{q: "customers who spent more than 200", sql: `SELECT * FROM customers c WHERE (SELECT sum(amount) FROM orders o WHERE o.customer_id = c.id) > 200`},
		{q: "how many customers spent more than 200", sql: `SELECT count(*) FROM customers c WHERE (SELECT sum(amount) FROM orders o WHERE o.customer_id = c.id) > 200`},
		{q: "what share of customers are vip", sql: `SELECT round(100.0 * count(*) FILTER (WHERE is_vip) / count(*), 2) FROM customers`},
		{q: "percentage of orders from web", sql: `SELECT round(100.0 * count(*) FILTER (WHERE channel = 'web') / count(*), 2) FROM orders`},
		{q: "customers in Texas except Austin", sql: `SELECT * FROM customers WHERE state = 'Texas' AND city <> 'Austin'`},
		{q: "customers not in Austin or Dallas", sql: `SELECT * FROM customers WHERE city NOT IN ('Austin', 'Dallas')`},
		{q: "orders not from web or phone", sql: `SELECT * FROM orders WHERE channel NOT IN ('web', 'phone')`},
		{q: "customers outside Texas", sql: `SELECT * FROM customers WHERE state IS DISTINCT FROM 'Texas'`},
		{q: "count of vip customers per state", sql: `SELECT state, count(*) FROM customers WHERE is_vip GROUP BY 1`},
		{q: "number of orders of each customer in Texas", sql: `SELECT c.id, c.name, count(*) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.state = 'Texas' GROUP BY 1, 2`},
		{q: "vip orders", sql: `SELECT o.* FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.is_vip`},
		// a verb that is the related rows' name: having them
		{q: "customers who ordered", sql: `SELECT * FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id)`},
		{q: "how many customers have ordered", sql: `SELECT count(*) FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id)`},
		{q: "customers who never ordered", sql: `SELECT * FROM customers c WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id)`},
		// no answer on this schema: refused, never guessed
		{q: "average weight of orders"},
		{q: "orders by colour"},
		{q: "how many customers have a pet"},
		{q: "what is the weather in Austin"},
		{q: "customers who love jazz"},
		{q: "total amount of orders per warehouse"},
		{q: "customers that bought"}, // to buy is not to order: no dataset is named after it
		{q: "top 5 customers by loyalty"},
	}}
}

func hrEval() nlSchema {
	byDept := func(agg string) string {
		return `SELECT d.id, d.name, ` + agg + ` FROM employees e JOIN departments d ON d.id = e.department_id GROUP BY 1, 2`
	}
	return nlSchema{name: "hr", dir: "hr", datasets: []string{"Departments", "Employees"}, questions: []nlEval{
		{q: "how many employees", sql: `SELECT count(*) FROM employees`},
		{q: "how many departments are there", sql: `SELECT count(*) FROM departments`},
		{q: "how many employees in Engineering", sql: `SELECT count(*) FROM employees e JOIN departments d ON d.id = e.department_id WHERE d.name = 'Engineering'`},
		{q: "how many employees per department", sql: byDept("count(*)")},
		{q: "number of employees in each department", sql: byDept("count(*)")},
		{q: "average salary per department", sql: byDept("avg(e.salary)")},
		{q: "average salary by department", sql: byDept("avg(e.salary)")},
		{q: "total salary for every department", sql: byDept("sum(e.salary)")},
		{q: "total salary by department location", sql: `SELECT d.location, sum(e.salary) FROM employees e JOIN departments d ON d.id = e.department_id GROUP BY 1`},
		{q: "which department has the highest average salary", sql: byDept("avg(e.salary)") + ` ORDER BY 3 DESC LIMIT 1`, ordered: true},
		{q: "which department has the most employees", sql: byDept("count(*)") + ` ORDER BY 3 DESC LIMIT 1`, ordered: true},
		{q: "which department has the fewest employees", sql: `SELECT d.id, d.name, count(e.id) FROM departments d LEFT JOIN employees e ON e.department_id = d.id GROUP BY 1, 2 ORDER BY 3 ASC LIMIT 1`, ordered: true},
		{q: "employees by name", sql: `SELECT full_name, count(*) FROM employees GROUP BY 1`},
		{q: "average salary by department name", sql: byDept("avg(e.salary)")},
		{q: "top 2 departments by total salary", sql: byDept("sum(e.salary)") + ` ORDER BY 3 DESC LIMIT 2`, ordered: true},
		{q: "top 3 departments by number of employees", sql: byDept("count(*)") + ` ORDER BY 3 DESC LIMIT 3`, ordered: true},
		{q: "departments with more than 2 employees", sql: `SELECT * FROM departments d WHERE (SELECT count(*) FROM employees e WHERE e.department_id = d.id) > 2`},
		{q: "departments without employees", sql: `SELECT * FROM departments d WHERE NOT EXISTS (SELECT 1 FROM employees e WHERE e.department_id = d.id)`},
		{q: "departments with no employees", sql: `SELECT * FROM departments d WHERE NOT EXISTS (SELECT 1 FROM employees e WHERE e.department_id = d.id)`},
		{q: "how many departments have employees", sql: `SELECT count(*) FROM departments d WHERE EXISTS (SELECT 1 FROM employees e WHERE e.department_id = d.id)`},
		{q: "how many remote employees", sql: `SELECT count(*) FROM employees WHERE is_remote`},
		{q: "how many employees are remote", sql: `SELECT count(*) FROM employees WHERE is_remote`},
		{q: "how many employees are not remote", sql: `SELECT count(*) FROM employees WHERE NOT is_remote`},
		{q: "non-remote employees", sql: `SELECT * FROM employees WHERE NOT is_remote`},
		{q: "remote employees in Sales", sql: `SELECT e.* FROM employees e JOIN departments d ON d.id = e.department_id WHERE e.is_remote AND d.name = 'Sales'`},
		{q: "average salary of remote employees", sql: `SELECT avg(salary) FROM employees WHERE is_remote`},
		{q: "average salary by level", sql: `SELECT level, avg(salary) FROM employees GROUP BY 1`},
		{q: "number of employees and average salary by level", sql: `SELECT level, count(*), avg(salary) FROM employees GROUP BY 1`},
		{q: "departments by number of employees", sql: `SELECT d.id, d.name, count(e.id) FROM departments d LEFT JOIN employees e ON e.department_id = d.id GROUP BY 1, 2 ORDER BY 3 DESC, 1`, ordered: true},
		{q: "how many employees by job title", sql: `SELECT job_title, count(*) FROM employees GROUP BY 1`},
		{q: "number of employees by level and job title", sql: `SELECT level, job_title, count(*) FROM employees GROUP BY 1, 2`},
		{q: "what is the highest salary", sql: `SELECT max(salary) FROM employees`},
		{q: "which employee has the highest salary", sql: `SELECT * FROM employees ORDER BY salary DESC LIMIT 1`, ordered: true},
		{q: "top 3 employees by salary", sql: `SELECT * FROM employees ORDER BY salary DESC LIMIT 3`, ordered: true},
		{q: "employees with the lowest salary", sql: `SELECT * FROM employees ORDER BY salary ASC LIMIT 1`, ordered: true},
		{q: "employees with salary over 80000", sql: `SELECT * FROM employees WHERE salary > 80000`},
		{q: "how many employees hired in 2023", sql: `SELECT count(*) FROM employees WHERE hire_date >= '2023-01-01' AND hire_date < '2024-01-01'`},
		{q: "employees hired after 2020", sql: `SELECT * FROM employees WHERE hire_date >= '2021-01-01'`},
		{q: "how many employees per department location", sql: `SELECT d.location, count(*) FROM employees e JOIN departments d ON d.id = e.department_id GROUP BY 1`},
		{q: "total budget of departments in London", sql: `SELECT sum(budget) FROM departments WHERE location = 'London'`},
		{q: "average budget", sql: `SELECT avg(budget) FROM departments`},
		{q: "departments in Paris", sql: `SELECT * FROM departments WHERE location = 'Paris'`},
		{q: "how many managers", sql: `SELECT count(*) FROM employees WHERE job_title = 'Manager'`},
		{q: "number of engineers", sql: `SELECT count(*) FROM employees WHERE job_title = 'Engineer'`},
		{q: "average salary of engineers", sql: `SELECT avg(salary) FROM employees WHERE job_title = 'Engineer'`},
		{q: "employees in London", sql: `SELECT e.* FROM employees e JOIN departments d ON d.id = e.department_id WHERE d.location = 'London'`},
		{q: "how many employees in London", sql: `SELECT count(*) FROM employees e JOIN departments d ON d.id = e.department_id WHERE d.location = 'London'`},
		{q: "average salary in Berlin", sql: `SELECT avg(e.salary) FROM employees e JOIN departments d ON d.id = e.department_id WHERE d.location = 'Berlin'`},
		{q: "share of employees by level", sql: `SELECT level, count(*), round(100.0 * count(*) / sum(count(*)) OVER (), 2) FROM employees GROUP BY 1`},
		{q: "percentage of remote employees", sql: `SELECT round(100.0 * count(*) FILTER (WHERE is_remote) / count(*), 2) FROM employees`},
		{q: "number of employees by hire year", sql: `SELECT date_trunc('year', hire_date)::date, count(*) FROM employees GROUP BY 1`},
		{q: "average salary by hire year", sql: `SELECT date_trunc('year', hire_date)::date, avg(salary) FROM employees GROUP BY 1`},
		{q: "senior employees", sql: `SELECT * FROM employees WHERE level = 'senior'`},
		{q: "how many senior engineers", sql: `SELECT count(*) FROM employees WHERE level = 'senior' AND job_title = 'Engineer'`},
		{q: "total salary of senior employees", sql: `SELECT sum(salary) FROM employees WHERE level = 'senior'`},
		{q: "minimum salary in Marketing", sql: `SELECT min(e.salary) FROM employees e JOIN departments d ON d.id = e.department_id WHERE d.name = 'Marketing'`},
		{q: "how many departments per location", sql: `SELECT location, count(*) FROM departments GROUP BY 1`},
		{q: "which location has the highest total budget", sql: `SELECT location, sum(budget) FROM departments GROUP BY 1 ORDER BY 2 DESC LIMIT 1`, ordered: true},
		{q: "departments with a budget over 150000", sql: `SELECT * FROM departments WHERE budget > 150000`},
		{q: "average number of employees per department", sql: `SELECT avg((SELECT count(*) FROM employees e WHERE e.department_id = d.id)) FROM departments d`},
		{q: "how many employees per department and level", sql: `SELECT d.id, d.name, e.level, count(*) FROM employees e JOIN departments d ON d.id = e.department_id GROUP BY 1, 2, 3`},
		{q: "total salary per department in London", sql: `SELECT d.id, d.name, sum(e.salary) FROM employees e JOIN departments d ON d.id = e.department_id WHERE d.location = 'London' GROUP BY 1, 2`},
		{q: "list the remote engineers", sql: `SELECT * FROM employees WHERE is_remote AND job_title = 'Engineer'`},
		{q: "how many distinct job titles", sql: `SELECT count(DISTINCT job_title) FROM employees`},
		{q: "employees not in Sales", sql: `SELECT e.* FROM employees e JOIN departments d ON d.id = e.department_id WHERE d.name IS DISTINCT FROM 'Sales'`},
		{q: "employees sorted by hire date", sql: `SELECT * FROM employees ORDER BY hire_date`, ordered: true},
		{q: "total salary of the Sales department", sql: `SELECT sum(e.salary) FROM employees e JOIN departments d ON d.id = e.department_id WHERE d.name = 'Sales'`},
		{q: "average salary of managers by department", sql: `SELECT d.id, d.name, avg(e.salary) FROM employees e JOIN departments d ON d.id = e.department_id WHERE e.job_title = 'Manager' GROUP BY 1, 2`},
		{q: "how many employees does each location have", sql: `SELECT d.location, count(*) FROM employees e JOIN departments d ON d.id = e.department_id GROUP BY 1`},
		{q: "number of managers by department", sql: `SELECT d.id, d.name, count(*) FROM employees e JOIN departments d ON d.id = e.department_id WHERE e.job_title = 'Manager' GROUP BY 1, 2`},
		{q: "how many managers in London", sql: `SELECT count(*) FROM employees e JOIN departments d ON d.id = e.department_id WHERE e.job_title = 'Manager' AND d.location = 'London'`},
		{q: "departments with salary over 100000", sql: `SELECT * FROM departments d WHERE EXISTS (SELECT 1 FROM employees e WHERE e.department_id = d.id AND e.salary > 100000)`},
		{q: "employees hired between 2019 and 2021", sql: `SELECT * FROM employees WHERE hire_date >= '2019-01-01' AND hire_date < '2022-01-01'`},
		{q: "average salary for each job title in Engineering", sql: `SELECT e.job_title, avg(e.salary) FROM employees e JOIN departments d ON d.id = e.department_id WHERE d.name = 'Engineering' GROUP BY 1`},
		{q: "average budget of departments with more than 2 employees", sql: `SELECT avg(budget) FROM departments d WHERE (SELECT count(*) FROM employees e WHERE e.department_id = d.id) > 2`},
		{q: "employees in London not in Engineering", sql: `SELECT e.* FROM employees e JOIN departments d ON d.id = e.department_id WHERE d.location = 'London' AND d.name <> 'Engineering'`},
		// no answer on this schema
		{q: "average age of employees"},
		{q: "employees who like pizza"},
		{q: "departments by colour"},
		{q: "how many employees speak French"},
		{q: "top 3 departments by revenue"},
	}}
}

func sensorsEval() nlSchema {
	bySensor := func(agg string) string {
		return `SELECT s.id, s.label, ` + agg + ` FROM readings r JOIN sensors s ON s.id = r.sensor_id GROUP BY 1, 2`
	}
	return nlSchema{name: "sensors", dir: "sensors", datasets: []string{"Sensors", "Readings"}, questions: []nlEval{
		{q: "how many readings", sql: `SELECT count(*) FROM readings`},
		{q: "how many sensors", sql: `SELECT count(*) FROM sensors`},
		{q: "how many sensors in the Warehouse", sql: `SELECT count(*) FROM sensors WHERE location = 'Warehouse'`},
		{q: "how many readings per sensor", sql: bySensor("count(*)")},
		{q: "average temperature per sensor", sql: bySensor("avg(r.temperature)")},
		{q: "average temperature by sensor location", sql: `SELECT s.location, avg(r.temperature) FROM readings r JOIN sensors s ON s.id = r.sensor_id GROUP BY 1`},
		{q: "maximum temperature", sql: `SELECT max(temperature) FROM readings`},
		{q: "which sensor has the highest average temperature", sql: bySensor("avg(r.temperature)") + ` ORDER BY 3 DESC LIMIT 1`, ordered: true},
		{q: "top 2 sensors by number of readings", sql: bySensor("count(*)") + ` ORDER BY 3 DESC LIMIT 2`, ordered: true},
		{q: "how many alerts", sql: `SELECT count(*) FROM readings WHERE is_alert`},
		{q: "how many readings are alerts", sql: `SELECT count(*) FROM readings WHERE is_alert`},
		{q: "how many alert readings", sql: `SELECT count(*) FROM readings WHERE is_alert`},
		{q: "how many readings in March 2024", sql: `SELECT count(*) FROM readings WHERE recorded_at >= '2024-03-01' AND recorded_at < '2024-04-01'`},
		{q: "number of readings by day", sql: `SELECT date_trunc('day', recorded_at)::date, count(*) FROM readings GROUP BY 1`},
		{q: "number of readings by month", sql: `SELECT date_trunc('month', recorded_at)::date, count(*) FROM readings GROUP BY 1`},
		{q: "average battery by sensor kind", sql: `SELECT s.kind, avg(r.battery) FROM readings r JOIN sensors s ON s.id = r.sensor_id GROUP BY 1`},
		{q: "sensors without readings", sql: `SELECT * FROM sensors s WHERE NOT EXISTS (SELECT 1 FROM readings r WHERE r.sensor_id = s.id)`},
		{q: "sensors with no readings", sql: `SELECT * FROM sensors s WHERE NOT EXISTS (SELECT 1 FROM readings r WHERE r.sensor_id = s.id)`},
		{q: "how many sensors have readings", sql: `SELECT count(*) FROM sensors s WHERE EXISTS (SELECT 1 FROM readings r WHERE r.sensor_id = s.id)`},
		{q: "sensors with more than 2 readings", sql: `SELECT * FROM sensors s WHERE (SELECT count(*) FROM readings r WHERE r.sensor_id = s.id) > 2`},
		{q: "how many sensors have alert readings", sql: `SELECT count(*) FROM sensors s WHERE EXISTS (SELECT 1 FROM readings r WHERE r.sensor_id = s.id AND r.is_alert)`},
		{q: "average temperature of alert readings", sql: `SELECT avg(temperature) FROM readings WHERE is_alert`},
		{q: "readings with temperature over 30", sql: `SELECT * FROM readings WHERE temperature > 30`},
		{q: "how many readings with temperature above 25", sql: `SELECT count(*) FROM readings WHERE temperature > 25`},
		{q: "average humidity in the Warehouse", sql: `SELECT avg(r.humidity) FROM readings r JOIN sensors s ON s.id = r.sensor_id WHERE s.location = 'Warehouse'`},
		{q: "thermometer sensors", sql: `SELECT * FROM sensors WHERE kind = 'thermometer'`},
		{q: "how many hygrometer sensors", sql: `SELECT count(*) FROM sensors WHERE kind = 'hygrometer'`},
		{q: "average temperature by kind", sql: `SELECT s.kind, avg(r.temperature) FROM readings r JOIN sensors s ON s.id = r.sensor_id GROUP BY 1`},
		{q: "what is the lowest battery", sql: `SELECT min(battery) FROM readings`},
		{q: "readings from S-North", sql: `SELECT r.* FROM readings r JOIN sensors s ON s.id = r.sensor_id WHERE s.label = 'S-North'`},
		{q: "how many readings from the Roof", sql: `SELECT count(*) FROM readings r JOIN sensors s ON s.id = r.sensor_id WHERE s.location = 'Roof'`},
		{q: "average temperature per day", sql: `SELECT date_trunc('day', recorded_at)::date, avg(temperature) FROM readings GROUP BY 1`},
		{q: "daily average temperature", sql: `SELECT date_trunc('day', recorded_at)::date, avg(temperature) FROM readings GROUP BY 1`},
		{q: "readings after 2024-04-01", sql: `SELECT * FROM readings WHERE recorded_at >= '2024-04-02'`},
		{q: "readings since 2024-04-01", sql: `SELECT * FROM readings WHERE recorded_at >= '2024-04-01'`},
		{q: "how many readings in April 2024", sql: `SELECT count(*) FROM readings WHERE recorded_at >= '2024-04-01' AND recorded_at < '2024-05-01'`},
		{q: "average temperature in March 2024", sql: `SELECT avg(temperature) FROM readings WHERE recorded_at >= '2024-03-01' AND recorded_at < '2024-04-01'`},
		{q: "sensors installed in 2024", sql: `SELECT * FROM sensors WHERE installed_on >= '2024-01-01' AND installed_on < '2025-01-01'`},
		{q: "how many sensors were installed in 2023", sql: `SELECT count(*) FROM sensors WHERE installed_on >= '2023-01-01' AND installed_on < '2024-01-01'`},
		{q: "number of sensors by kind", sql: `SELECT kind, count(*) FROM sensors GROUP BY 1`},
		{q: "how many sensors per location", sql: `SELECT location, count(*) FROM sensors GROUP BY 1`},
		{q: "share of readings by sensor kind", sql: `SELECT s.kind, count(*), round(100.0 * count(*) / sum(count(*)) OVER (), 2) FROM readings r JOIN sensors s ON s.id = r.sensor_id GROUP BY 1`},
		{q: "percentage of alert readings", sql: `SELECT round(100.0 * count(*) FILTER (WHERE is_alert) / count(*), 2) FROM readings`},
		{q: "average number of readings per sensor", sql: `SELECT avg((SELECT count(*) FROM readings r WHERE r.sensor_id = s.id)) FROM sensors s`},
		{q: "maximum humidity per sensor", sql: bySensor("max(r.humidity)")},
		{q: "minimum temperature by location", sql: `SELECT s.location, min(r.temperature) FROM readings r JOIN sensors s ON s.id = r.sensor_id GROUP BY 1`},
		{q: "count of readings with battery below 50", sql: `SELECT count(*) FROM readings WHERE battery < 50`},
		{q: "readings with battery below 50", sql: `SELECT * FROM readings WHERE battery < 50`},
		{q: "top 3 readings by temperature", sql: `SELECT * FROM readings ORDER BY temperature DESC LIMIT 3`, ordered: true},
		{q: "which reading has the highest temperature", sql: `SELECT * FROM readings ORDER BY temperature DESC LIMIT 1`, ordered: true},
		{q: "alert readings by sensor", sql: `SELECT s.id, s.label, count(*) FROM readings r JOIN sensors s ON s.id = r.sensor_id WHERE r.is_alert GROUP BY 1, 2`},
		{q: "how many alerts per sensor", sql: `SELECT s.id, s.label, count(*) FROM readings r JOIN sensors s ON s.id = r.sensor_id WHERE r.is_alert GROUP BY 1, 2`},
		{q: "number of readings by sensor location and kind", sql: `SELECT s.location, s.kind, count(*) FROM readings r JOIN sensors s ON s.id = r.sensor_id GROUP BY 1, 2`},
		{q: "sensors in the Lab", sql: `SELECT * FROM sensors WHERE location = 'Lab'`},
		{q: "sensors sorted by installed on", sql: `SELECT * FROM sensors ORDER BY installed_on`, ordered: true},
		{q: "average battery of readings from thermometer sensors", sql: `SELECT avg(r.battery) FROM readings r JOIN sensors s ON s.id = r.sensor_id WHERE s.kind = 'thermometer'`},
		{q: "readings not from the Warehouse", sql: `SELECT r.* FROM readings r JOIN sensors s ON s.id = r.sensor_id WHERE s.location IS DISTINCT FROM 'Warehouse'`},
		{q: "how many readings are not alerts", sql: `SELECT count(*) FROM readings WHERE NOT is_alert`},
		{q: "average humidity by month", sql: `SELECT date_trunc('month', recorded_at)::date, avg(humidity) FROM readings GROUP BY 1`},
		{q: "how many readings per sensor per day", sql: `SELECT s.id, s.label, date_trunc('day', r.recorded_at)::date, count(*) FROM readings r JOIN sensors s ON s.id = r.sensor_id GROUP BY 1, 2, 3`},
		{q: "sensors with alerts", sql: `SELECT * FROM sensors s WHERE EXISTS (SELECT 1 FROM readings r WHERE r.sensor_id = s.id AND r.is_alert)`},
		{q: "max temperature by sensor", sql: bySensor("max(r.temperature)")},
		{q: "which location has the most readings", sql: `SELECT s.location, count(*) FROM readings r JOIN sensors s ON s.id = r.sensor_id GROUP BY 1 ORDER BY 2 DESC LIMIT 1`, ordered: true},
		{q: "how many readings does each sensor have", sql: bySensor("count(*)")},
		{q: "readings with temperature above 30 or humidity below 20", sql: `SELECT * FROM readings WHERE temperature > 30 OR humidity < 20`},
		{q: "sensors with temperature above 30", sql: `SELECT * FROM sensors s WHERE EXISTS (SELECT 1 FROM readings r WHERE r.sensor_id = s.id AND r.temperature > 30)`},
		{q: "readings with temperature between 20 and 25", sql: `SELECT * FROM readings WHERE temperature BETWEEN 20 AND 25`},
		{q: "number of alerts by location", sql: `SELECT s.location, count(*) FROM readings r JOIN sensors s ON s.id = r.sensor_id WHERE r.is_alert GROUP BY 1`},
		{q: "latest reading", sql: `SELECT * FROM readings ORDER BY recorded_at DESC LIMIT 1`, ordered: true},
		// no answer on this schema
		{q: "average pressure"},
		{q: "sensors by colour"},
		{q: "readings from Mars"},
		{q: "how many sensors are broken"},
		{q: "number of readings per hour"},
		{q: "humidity by sensor"},
		{q: "which sensor has the lowest battery"},
	}}
}

// shopAnswers checks what the answers say besides their rows: assumptions in the steps and
// the warnings, what a refusal did not understand with suggestions from the schema, and that
// a refusal never shows PostgreSQL's words about SQL the user did not write.
func shopAnswers(t *testing.T, e *env) {
	ask := func(q string) *resp {
		return e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", map[string]any{"query": q}, bearer(e.ownerToken))
	}
	for _, c := range []struct{ q, warning string }{
		{"Top 5 customers by order amount", "assumed the total (sum) of amount"},
		{"customers with orders over 100", "assumed amount of Orders is meant"},
		{"how many orders in 2024", "assumed the date is order date of Orders"},
	} {
		r := ask(c.q).status(200)
		w := fmt.Sprint(r.get("warnings"))
		if !strings.Contains(w, c.warning) || !strings.Contains(fmt.Sprint(r.get("explanation.steps")), "A"+c.warning[1:]) {
			t.Errorf("%q: want the assumption %q in warnings and steps: %s", c.q, c.warning, r.Body)
		}
	}
	if r := ask("How many customers in Austin?").status(200); r.get("warnings") != nil && r.len("warnings") > 0 {
		t.Errorf("an answer without assumptions has warnings: %s", r.Body)
	}
	for _, c := range []struct{ q, reason, suggestion string }{
		{"average amnt of orders by channel", `"amnt"`, "the column amount of Orders"},
		{"orders by chanel type", `"type"`, ""},
		{"how many customers have a pet", `"pet"`, ""},
		{"total amount of orders per warehouse", `"warehouse"`, ""},
		{"Total order amount per customer with a discount", `"discount"`, ""},
		{"how many customers in Austin signed by fax", `"fax"`, ""},
	} {
		r := ask(c.q).apiError(400, "INVALID_QUERY")
		sug := fmt.Sprint(r.get("error.details.suggestions"))
		if !strings.Contains(r.str("error.details.reason"), c.reason) || r.len("error.details.suggestions") == 0 || !strings.Contains(sug, c.suggestion) {
			t.Errorf("%q: want a reason naming %s and suggestions with %q: %s", c.q, c.reason, c.suggestion, r.Body)
		}
		if strings.Contains(string(r.Body), "SELECT") || strings.Contains(string(r.Body), "pq:") {
			t.Errorf("%q: the refusal shows SQL: %s", c.q, r.Body)
		}
	}
}

// schoolEval is many-to-many: students and courses through enrollments.
func schoolEval() nlSchema {
	perCourse := func(agg string) string {
		return `SELECT c.id, c.title, ` + agg + ` FROM enrollments e JOIN courses c ON c.id = e.course_id GROUP BY 1, 2`
	}
	perStudent := func(agg string) string {
		return `SELECT s.id, s.name, ` + agg + ` FROM enrollments e JOIN students s ON s.id = e.student_id GROUP BY 1, 2`
	}
	takes := func(cond string) string {
		return `EXISTS (SELECT 1 FROM enrollments e JOIN courses c ON c.id = e.course_id WHERE e.student_id = s.id AND ` + cond + `)`
	}
	return nlSchema{name: "school", dir: "school", datasets: []string{"Students", "Courses", "Enrollments"}, questions: []nlEval{
		{q: "how many students", sql: `SELECT count(*) FROM students`},
		{q: "how many courses", sql: `SELECT count(*) FROM courses`},
		{q: "how many enrollments", sql: `SELECT count(*) FROM enrollments`},
		{q: "how many students per course", sql: perCourse("count(DISTINCT e.student_id)")},
		{q: "how many courses per student", sql: perStudent("count(DISTINCT e.course_id)")},
		{q: "how many students in Algebra", sql: `SELECT count(*) FROM students s WHERE ` + takes(`c.title = 'Algebra'`)},
		{q: "students taking Chemistry", sql: `SELECT * FROM students s WHERE ` + takes(`c.title = 'Chemistry'`)},
		{q: "students in Math courses", sql: `SELECT * FROM students s WHERE ` + takes(`c.subject = 'Math'`)},
		{q: "how many scholarship students took Algebra", sql: `SELECT count(*) FROM students s WHERE is_scholarship AND ` + takes(`c.title = 'Algebra'`)},
		{q: "students without enrollments", sql: `SELECT * FROM students s WHERE NOT EXISTS (SELECT 1 FROM enrollments e WHERE e.student_id = s.id)`},
		{q: "students with no courses", sql: `SELECT * FROM students s WHERE NOT EXISTS (SELECT 1 FROM enrollments e WHERE e.student_id = s.id)`},
		{q: "courses without students", sql: `SELECT * FROM courses c WHERE NOT EXISTS (SELECT 1 FROM enrollments e WHERE e.course_id = c.id)`},
		{q: "courses with more than 2 students", sql: `SELECT * FROM courses c WHERE (SELECT count(DISTINCT e.student_id) FROM enrollments e WHERE e.course_id = c.id) > 2`},
		{q: "students with at least 3 courses", sql: `SELECT * FROM students s WHERE (SELECT count(DISTINCT e.course_id) FROM enrollments e WHERE e.student_id = s.id) >= 3`},
		{q: "which course has the most students", sql: perCourse("count(DISTINCT e.student_id)") + ` ORDER BY 3 DESC LIMIT 1`, ordered: true},
		{q: "average score per course", sql: perCourse("avg(e.score)")},
		{q: "average score by student", sql: perStudent("avg(e.score)")},
		{q: "top 2 students by average score", sql: perStudent("avg(e.score)") + ` ORDER BY 3 DESC LIMIT 2`, ordered: true},
		{q: "which student has the highest average score", sql: perStudent("avg(e.score)") + ` ORDER BY 3 DESC LIMIT 1`, ordered: true},
		{q: "scholarship students", sql: `SELECT * FROM students WHERE is_scholarship`},
		{q: "average score in Math", sql: `SELECT avg(e.score) FROM enrollments e JOIN courses c ON c.id = e.course_id WHERE c.subject = 'Math'`},
		{q: "average score of scholarship students", sql: `SELECT avg(e.score) FROM enrollments e JOIN students s ON s.id = e.student_id WHERE s.is_scholarship`},
		{q: "number of enrollments by subject", sql: `SELECT c.subject, count(*) FROM enrollments e JOIN courses c ON c.id = e.course_id GROUP BY 1`},
		{q: "number of students by grade", sql: `SELECT grade, count(*) FROM students GROUP BY 1`},
		{q: "how many enrollments in February 2024", sql: `SELECT count(*) FROM enrollments WHERE enrolled_on >= '2024-02-01' AND enrolled_on < '2024-03-01'`},
		{q: "maximum score", sql: `SELECT max(score) FROM enrollments`},
		{q: "enrollments with a score below 80", sql: `SELECT * FROM enrollments WHERE score < 80`},
		{q: "courses by subject", sql: `SELECT subject, count(*) FROM courses GROUP BY 1`},
		{q: "total credits of Math courses", sql: `SELECT sum(credits) FROM courses WHERE subject = 'Math'`},
		{q: "how many students per subject", sql: `SELECT c.subject, count(DISTINCT e.student_id) FROM enrollments e JOIN courses c ON c.id = e.course_id GROUP BY 1`},
		{q: "students in Algebra or Poetry", sql: `SELECT * FROM students s WHERE ` + takes(`c.title IN ('Algebra', 'Poetry')`)},
		{q: "how many courses does Ana take", sql: `SELECT count(*) FROM courses c WHERE EXISTS (SELECT 1 FROM enrollments e JOIN students s ON s.id = e.student_id WHERE e.course_id = c.id AND s.name = 'Ana')`},
		{q: "how many students per course in Math", sql: `SELECT c.id, c.title, count(DISTINCT e.student_id) FROM enrollments e JOIN courses c ON c.id = e.course_id WHERE c.subject = 'Math' GROUP BY 1, 2`},
		// "and" of two courses: students in both, or in either? No one answer: refused
		{q: "students in Algebra and Poetry"},
		// no answer on this schema
		{q: "students by teacher"},
		{q: "average attendance per course"},
	}}
}
