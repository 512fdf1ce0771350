// Package datasets keeps a dataset's tables in the platform's PostgreSQL:
//
//   - DDL: declared columns as column definitions, named table constraints and literals, the
//     row-level security, change trigger and full-text search document of a dataset table
//     (ddl.go); a dataset's tables and dropping them (tables.go); the organization schemas
//     and the query roles user SQL runs under (roles.go).
//   - Loading: the ingest job, which infers an uploaded file's columns (store/ingest),
//     creates the table and loads the rows with COPY in one transaction (ingest.go); foreign
//     tables over a connected database (connect.go).
//   - Schema changes: ALTER TABLE steps checked against the existing rows first (alter.go).
//   - Analysis: per-table statistics, search index entries and inferred relationships, and
//     the refresh job that recomputes them (analyze.go); the job that builds the search and
//     column indexes (search.go).
package datasets
