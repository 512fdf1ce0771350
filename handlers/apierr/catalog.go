package apierr

// Doc documents one error code; the documentation_url of an error body points at it.
type Doc struct {
	Status      int    `json:"status"`
	Title       string `json:"title"`
	Description string `json:"description"`
}

// Catalog lists every error code the service answers with.
var Catalog = map[string]Doc{
	"VALIDATION_ERROR":         {400, "Validation error", "The request is malformed or violates the published schema: bad JSON, a wrong content type, an unknown or duplicated field, or a value out of its bounds. `details` has one entry per field with `field`, `code` (required, minLength, maxLength, format, enum, pattern, minimum, maximum, type, unknown_field, duplicate, invalid_json) and `message`. Nothing was changed."},
	"AUTH_REQUIRED":            {401, "Authentication required", "Credentials are missing or invalid. Send `Authorization: Bearer <access token>` or `X-API-Key: <key>`."},
	"TOKEN_EXPIRED":            {401, "Token expired", "The access token has expired. Exchange the refresh token at /api/v1/auth/refresh or sign in again."},
	"PERMISSION_DENIED":        {403, "Permission denied", "The caller lacks the permission named in `required_permission` (for an API key: the key's permissions, within its owner's role)."},
	"INSUFFICIENT_PERMISSIONS": {403, "Insufficient organization role", "The action needs the organization role in `required_role`; `your_role` is the caller's."},
	"NOT_FOUND":                {404, "Not found", "The resource does not exist, or it belongs to an organization the caller is not a member of."},
	"DATASET_NOT_FOUND":        {404, "Dataset not found", "The dataset does not exist in this project, or belongs to an organization the caller is not a member of; `details.dataset_id` names it."},
	"RECORD_NOT_FOUND":         {404, "Record not found", "No live record of the dataset has this id (a soft-deleted record is gone from reads)."},
	"OPTIMISTIC_LOCK_ERROR":    {409, "Optimistic lock error", "The record changed since the version (or ETag) sent; nothing was written. `details.current_version` is the version to read again."},
	"IDEMPOTENCY_KEY_REUSED":   {422, "Idempotency key reused", "The X-Idempotency-Key was first used with a different request body; the first request's answer stays bound to it. Use a new key."},
	"PATCH_TEST_FAILED":        {409, "JSON Patch test failed", "A `test` operation of the JSON Patch did not hold; nothing was changed."},
	"INVITATION_NOT_FOUND":     {404, "Invitation not found", "The invitation token is unknown, withdrawn or already used."},
	"METHOD_NOT_ALLOWED":       {405, "Method not allowed", "The path exists but not with this method; the Allow header lists the methods it has."},
	"CONFLICT":                 {409, "Conflict", "The request conflicts with the current state, e.g. a name or slug already taken (`details.field`), or removing the last owner."},
	"INVITATION_EXPIRED":       {410, "Invitation expired", "The invitation has expired; ask for a new one."},
	"INVALID_FILE_FORMAT":      {400, "Invalid file format", "The upload is not CSV, JSON (an array of objects or NDJSON) or Parquet, judged by its content. `details` has `provided_format` and `supported_formats`."},
	"FILE_TOO_LARGE":           {413, "File too large", "The upload exceeds DP_MAX_UPLOAD_BYTES; `details` has `provided_size`, `max_size` and `max_size_human`."},
	"PAYLOAD_TOO_LARGE":        {413, "Payload too large", "The request body exceeds the limit for this endpoint."},
	"EXPORT_TOO_LARGE":         {413, "Export too large for the format", "An Excel sheet holds 1,048,575 records; export csv, ndjson or parquet, or filter."},
	"INVALID_QUERY":            {400, "Invalid query", "PostgreSQL refused the SQL: `details` has `line`, `column` and the database's `message`."},
	"FORBIDDEN_OPERATION":      {400, "Forbidden operation", "Query endpoints run exactly one SELECT: other statements, data-modifying WITH clauses, SELECT INTO, locking clauses, settings, advisory locks, sleeping, files and the system catalogs are refused (400, so that the details stay in the nested envelope)."},
	"QUERY_TIMEOUT":            {408, "Query timeout", "The query ran past its statement timeout and was cancelled; `details` has `timeout_seconds`, `execution_time_seconds` and a `suggestion`."},
	"LIMIT_EXCEEDED":           {422, "Limit exceeded", "A fixed limit of the service is reached: `details` has `limit` and `current`."},
	"PLAN_LIMIT_EXCEEDED":      {422, "Plan limit exceeded", "The organization's plan does not allow more; `details` names the current count, the plan limit and a plan that allows more."},
	"SCHEMA_VIOLATION":         {422, "Schema change violated by existing rows", "A schema change cannot be applied: existing rows cannot be cast to the new type or break a new constraint. `details.violations` lists each failing change with `row_count` and the first rows (`id`, `value`). Nothing was changed."},
	"SCHEMA_VERSION_CONFLICT":  {409, "Schema changed meanwhile", "`expected_version` is not the dataset's current `schema_version`: read the schema again and resend the change."},
	"CONNECTION_FAILED":        {400, "Database connection failed", "The database of a connected dataset could not be reached or refused the credentials; `details.reason` is the driver's message. Nothing was created."},
	"NOT_SUPPORTED":            {501, "Not supported by this installation", "The platform's database lacks what the request needs, such as the foreign data wrapper for a database type."},
	"RATE_LIMIT_EXCEEDED":      {429, "Rate limit exceeded", "Too many requests in the current window for this category. Wait `X-RateLimit-Reset-After` seconds."},
	"INTERNAL_ERROR":           {500, "Internal error", "Something failed on the server. The request id identifies it in the logs."},
	"OIDC_NOT_CONFIGURED":      {501, "Identity provider not configured", "No OpenID Connect provider is configured (DP_OIDC_ISSUER)."},
	"OIDC_ERROR":               {502, "Identity provider error", "The identity provider could not be reached or answered something unusable."},
	"SERVICE_UNAVAILABLE":      {503, "Service unavailable", "A dependency such as the database is not available."},
}
