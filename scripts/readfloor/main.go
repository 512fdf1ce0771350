// Command readfloor is the least an HTTP API in Go spends on a read: the service's own stack
// (net/http, lib/pq with binary parameters) running one statement prepared once and writing
// its rows' first column in one write, with no authentication, validation, routing or
// shaping. scripts/bench-records.sh runs it beside the service and pgbench on the same
// statement: the ratios then say what the stack costs, and what the service adds to it.
//
//	go run ./scripts/readfloor -addr 127.0.0.1:18097 -db "$DATABASE_URL" \
//	    -sql 'SELECT to_json(r) FROM (SELECT * FROM t WHERE id = $1) r' -args 123456
//
// GET / answers the statement's first column: one value, or a JSON array of the values when
// -array is set (a list page).
package main

import (
	"database/sql"
	"flag"
	"log"
	"net/http"
	"strings"

	_ "github.com/lib/pq"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18097", "listen address")
	dsn := flag.String("db", "", "PostgreSQL URL")
	query := flag.String("sql", "", "the statement, with $1... parameters")
	argList := flag.String("args", "", "its parameters' values, comma separated")
	array := flag.Bool("array", false, "answer every row's first column as a JSON array")
	flag.Parse()
	sep := "?"
	if strings.Contains(*dsn, "?") {
		sep = "&"
	}
	db, err := sql.Open("postgres", *dsn+sep+"binary_parameters=yes")
	if err != nil {
		log.Fatal(err)
	}
	db.SetMaxOpenConns(40)
	db.SetMaxIdleConns(40)
	st, err := db.Prepare(*query)
	if err != nil {
		log.Fatal(err)
	}
	var args []any
	if *argList != "" {
		for _, a := range strings.Split(*argList, ",") {
			args = append(args, a)
		}
	}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		rows, err := st.QueryContext(r.Context(), args...)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer func() { _ = rows.Close() }()
		cols, _ := rows.Columns()
		dest := make([]any, len(cols))
		var v []byte
		dest[0] = &v
		for i := 1; i < len(dest); i++ {
			dest[i] = new(sql.RawBytes)
		}
		var out []byte
		for n := 0; rows.Next(); n++ {
			if err := rows.Scan(dest...); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			if *array && n > 0 {
				out = append(out, ',')
			}
			out = append(out, v...)
		}
		if *array {
			out = append(append([]byte{'['}, out...), ']')
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	})
	log.Fatal(http.ListenAndServe(*addr, nil))
}
