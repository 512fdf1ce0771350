package apierr

// Doc documents one error code; the documentation_url of an error body points at it.
type Doc struct {
	Status      int    `json:"status"`
	Title       string `json:"title"`
	Description string `json:"description"`
}

// Code is a stable error code of the API; Catalog documents each one.
type Code string

// The codes the service answers with.
const (
	CodeValidationError         Code = "VALIDATION_ERROR"
	CodeAuthRequired            Code = "AUTH_REQUIRED"
	CodeTokenExpired            Code = "TOKEN_EXPIRED"
	CodePermissionDenied        Code = "PERMISSION_DENIED"
	CodeInsufficientPermissions Code = "INSUFFICIENT_PERMISSIONS"
	CodeNotFound                Code = "NOT_FOUND"
	CodeDatasetNotFound         Code = "DATASET_NOT_FOUND"
	CodeRecordNotFound          Code = "RECORD_NOT_FOUND"
	CodeOptimisticLockError     Code = "OPTIMISTIC_LOCK_ERROR"
	CodeIdempotencyKeyReused    Code = "IDEMPOTENCY_KEY_REUSED"
	CodePatchTestFailed         Code = "PATCH_TEST_FAILED"
	CodeInvitationNotFound      Code = "INVITATION_NOT_FOUND"
	CodeMethodNotAllowed        Code = "METHOD_NOT_ALLOWED"
	CodeConflict                Code = "CONFLICT"
	CodeInvitationExpired       Code = "INVITATION_EXPIRED"
	CodeInvalidFileFormat       Code = "INVALID_FILE_FORMAT"
	CodeFileTooLarge            Code = "FILE_TOO_LARGE"
	CodePayloadTooLarge         Code = "PAYLOAD_TOO_LARGE"
	CodeUploadTooSlow           Code = "UPLOAD_TOO_SLOW"
	CodeExportTooLarge          Code = "EXPORT_TOO_LARGE"
	CodeInvalidQuery            Code = "INVALID_QUERY"
	CodeForbiddenOperation      Code = "FORBIDDEN_OPERATION"
	CodeQueryTimeout            Code = "QUERY_TIMEOUT"
	CodeLimitExceeded           Code = "LIMIT_EXCEEDED"
	CodePlanLimitExceeded       Code = "PLAN_LIMIT_EXCEEDED"
	CodeSchemaViolation         Code = "SCHEMA_VIOLATION"
	CodeSchemaVersionConflict   Code = "SCHEMA_VERSION_CONFLICT"
	CodeConnectionFailed        Code = "CONNECTION_FAILED"
	CodeNotSupported            Code = "NOT_SUPPORTED"
	CodeRateLimitExceeded       Code = "RATE_LIMIT_EXCEEDED"
	CodeInternalError           Code = "INTERNAL_ERROR"
	CodeOidcNotConfigured       Code = "OIDC_NOT_CONFIGURED"
	CodeOidcError               Code = "OIDC_ERROR"
	CodeEmailNotVerified        Code = "EMAIL_NOT_VERIFIED"
	CodeInvalidVerificationCode Code = "INVALID_VERIFICATION_CODE"
	CodeMailNotConfigured       Code = "MAIL_NOT_CONFIGURED"
	CodeMailError               Code = "MAIL_ERROR"
	CodeLoginThrottled          Code = "LOGIN_THROTTLED"
	CodeServiceUnavailable      Code = "SERVICE_UNAVAILABLE"
	CodeStorageFull             Code = "STORAGE_FULL"
	CodeStorageUnavailable      Code = "STORAGE_UNAVAILABLE"
	CodeDescriptionUnavailable  Code = "DESCRIPTION_UNAVAILABLE"
	CodeIPNotAllowed            Code = "IP_NOT_ALLOWED"
	CodeTwoFactorRequired       Code = "TWO_FACTOR_REQUIRED"
	CodeSessionExpired          Code = "SESSION_EXPIRED"
	CodeAPIKeyOwnerAccessLost   Code = "API_KEY_OWNER_ACCESS_LOST"
	CodeTwoFactorCodeRequired   Code = "TWO_FACTOR_CODE_REQUIRED"
	CodeInvalidTwoFactorCode    Code = "INVALID_TWO_FACTOR_CODE"
	CodeCSRFCheckFailed         Code = "CSRF_CHECK_FAILED"
	CodeUpgradeRequired         Code = "UPGRADE_REQUIRED"
	// Dashboard routes (the dashboard error shape writes codes in lower case).
	CodeNameRequired        Code = "NAME_REQUIRED"
	CodeNoSources           Code = "NO_SOURCES"
	CodeTooManyDatasets     Code = "TOO_MANY_DATASETS"
	CodeDashboardModified   Code = "DASHBOARD_MODIFIED"
	CodeDatasetNotReady     Code = "DATASET_NOT_READY"
	CodeNothingToShow       Code = "NOTHING_TO_SHOW"
	CodePromptNotUnderstood Code = "PROMPT_NOT_UNDERSTOOD"
	CodeViewBroken          Code = "VIEW_BROKEN"
)

// Catalog lists every error code the service answers with.
var Catalog = map[Code]Doc{
	CodeNameRequired:            {400, "Name required", "The project form of dashboard generation needs a `name`."},
	CodeNoSources:               {400, "No sources", "The project form of dashboard generation needs at least one dataset or view (`dataset_ids`, `view_ids`)."},
	CodeTooManyDatasets:         {400, "Too many datasets", "The project form of dashboard generation takes at most 12 datasets and 6 views, 18 sources in all."},
	CodeDashboardModified:       {412, "Dashboard modified", "The dashboard changed since the ETag sent in If-Match: read it again and retry."},
	CodeDatasetNotReady:         {409, "Dataset not ready", "The dataset is still processing (its first load, or an import into it) or failed: a dashboard is made of an active dataset, and records are written once it is active (reads go on during an import)."},
	CodeNothingToShow:           {409, "Nothing to show", "No tile could be made of the sources: every proposed tile's query failed or returned no rows (an empty dataset, say)."},
	CodeValidationError:         {400, "Validation error", "The request is malformed or violates the published schema: bad JSON, a wrong content type, an unknown or duplicated field, or a value out of its bounds. `details` has one entry per field with `field`, `code` (required, minLength, maxLength, format, enum, pattern, minimum, maximum, type, unknown_field, duplicate, invalid_json) and `message`. Nothing was changed."},
	CodeAuthRequired:            {401, "Authentication required", "Credentials are missing or invalid. Send `Authorization: Bearer <access token>` or `X-API-Key: <key>`."},
	CodeTokenExpired:            {401, "Token expired", "The access token has expired. Exchange the refresh token at /api/v1/auth/refresh or sign in again."},
	CodePermissionDenied:        {403, "Permission denied", "The caller lacks the permission named in `required_permission` (for an API key: the key's permissions, within its owner's role)."},
	CodeInsufficientPermissions: {403, "Insufficient organization role", "The action needs the organization role in `required_role`; `your_role` is the caller's."},
	CodeNotFound:                {404, "Not found", "The resource does not exist, or it belongs to an organization the caller is not a member of."},
	CodeDatasetNotFound:         {404, "Dataset not found", "The dataset does not exist in this project, or belongs to an organization the caller is not a member of; `details.dataset_id` names it."},
	CodeRecordNotFound:          {404, "Record not found", "No live record of the dataset has this id (a soft-deleted record is gone from reads)."},
	CodeOptimisticLockError:     {409, "Optimistic lock error", "The record changed since the version (or ETag) sent; nothing was written. `details.current_version` is the version to read again."},
	CodeIdempotencyKeyReused:    {422, "Idempotency key reused", "The X-Idempotency-Key was first used with a different request body; the first request's answer stays bound to it. Use a new key."},
	CodePatchTestFailed:         {409, "JSON Patch test failed", "A `test` operation of the JSON Patch did not hold; nothing was changed."},
	CodeInvitationNotFound:      {404, "Invitation not found", "The invitation token is unknown, withdrawn or already used."},
	CodeMethodNotAllowed:        {405, "Method not allowed", "The path exists but not with this method; the Allow header lists the methods it has."},
	CodeConflict:                {409, "Conflict", "The request conflicts with the current state, e.g. a name or slug already taken (`details.field`), or removing the last owner."},
	CodeInvitationExpired:       {410, "Invitation expired", "The invitation has expired; ask for a new one."},
	CodeInvalidFileFormat:       {400, "Invalid file format", "The upload is not CSV, JSON (an array of objects or NDJSON) or Parquet, judged by its content. `details` has `provided_format` and `supported_formats`."},
	CodeFileTooLarge:            {413, "File too large", "The upload exceeds DP_MAX_UPLOAD_BYTES; `details` has `provided_size`, `max_size` and `max_size_human`."},
	CodePayloadTooLarge:         {413, "Payload too large", "The request body exceeds the limit for this endpoint."},
	CodeUploadTooSlow:           {408, "Upload too slow", "The upload's body arrived slower than DP_UPLOAD_MIN_RATE bytes a second over a DP_UPLOAD_RATE_WINDOW (default 8 KiB/s over 30 s), or stalled for a window; nothing was kept."},
	CodeExportTooLarge:          {413, "Export too large for the format", "An Excel sheet holds 1,048,575 records; export csv, ndjson or parquet, or filter."},
	CodeInvalidQuery:            {400, "Invalid query", "PostgreSQL refused the SQL: `details` has `line`, `column` and the database's `message`."},
	CodeForbiddenOperation:      {400, "Forbidden operation", "Query endpoints run exactly one SELECT: other statements, data-modifying WITH clauses, SELECT INTO, locking clauses, settings, advisory locks, sleeping, files and the system catalogs are refused (400, so that the details stay in the nested envelope)."},
	CodeQueryTimeout:            {408, "Query timeout", "The query ran past its statement timeout and was cancelled; `details` has `timeout_seconds`, `execution_time_seconds` and a `suggestion`."},
	CodeLimitExceeded:           {422, "Limit exceeded", "A fixed limit of the service is reached: `details` has `limit` and `current`."},
	CodePlanLimitExceeded:       {422, "Plan limit exceeded", "The organization's plan does not allow more; `details` names the current count, the plan limit and a plan that allows more."},
	CodeSchemaViolation:         {422, "Schema change violated by existing rows", "A schema change cannot be applied: existing rows cannot be cast to the new type or break a new constraint. `details.violations` lists each failing change with `row_count` and the first rows (`id`, `value`). Nothing was changed."},
	CodeSchemaVersionConflict:   {409, "Schema changed meanwhile", "`expected_version` is not the dataset's current `schema_version`: read the schema again and resend the change."},
	CodeConnectionFailed:        {400, "Database connection failed", "The database of a connected dataset could not be reached or refused the credentials; `details.reason` is the driver's message. Nothing was created."},
	CodeNotSupported:            {501, "Not supported by this installation", "The platform's database lacks what the request needs, such as the foreign data wrapper for a database type."},
	CodeRateLimitExceeded:       {429, "Rate limit exceeded", "Too many requests in the current window for this category. Wait `X-RateLimit-Reset-After` seconds."},
	CodeInternalError:           {500, "Internal error", "Something failed on the server. The request id identifies it in the logs."},
	CodeOidcNotConfigured:       {501, "Identity provider not configured", "No OpenID Connect provider is configured (DP_OIDC_ISSUER)."},
	CodeOidcError:               {502, "Identity provider error", "The identity provider could not be reached or answered something unusable."},
	CodeEmailNotVerified:        {403, "Email address not verified", "The action needs an account whose email address is verified: joining another organization by invitation, or linking an identity provider account to an existing account (where the provider must vouch for the address too). Verify it through /api/v1/auth/verify-email/send."},
	CodeInvalidVerificationCode: {400, "Invalid verification code", "The code is wrong, expired (24 hours), already used, for another address or account, or has had 5 wrong tries; ask for a new one."},
	CodeMailNotConfigured:       {501, "Mail not configured", "No mail server is configured (DP_SMTP_URL), so no mail can be sent."},
	CodeMailError:               {502, "Mail server error", "The mail server could not be reached or refused the message; nothing was kept."},
	CodeLoginThrottled:          {429, "Too many failed sign-ins", "This email address had 5 or more failed sign-ins in a row: attempts wait `Retry-After` seconds (1 second, doubling with each further failure, at most 15 minutes), even with the right password. A successful sign-in resets the count."},
	CodeServiceUnavailable:      {503, "Service unavailable", "A dependency such as the database is not available."},
	CodeStorageFull:             {507, "Storage full", "The server's data directory has no room for the file; nothing was kept. The operator must free space; retrying later may work."},
	CodeStorageUnavailable:      {503, "Storage unavailable", "The server cannot write to its data directory (permissions, a read-only or failed disk); nothing was kept. Retry after `Retry-After` seconds; the operator is told in the server's log."},
	CodeIPNotAllowed:            {403, "Address not allowed", "The organization accepts requests for its resources only from the networks of its `settings.security.ip_allowlist`; `details` has `ip_address`, the address the request came from."},
	CodeTwoFactorRequired:       {403, "Two-factor sign-in required", "The organization requires two-factor sign-in (`settings.security.two_factor_required`) and the caller's account has none. Enrol at /api/v1/auth/2fa/setup, then try again."},
	CodeTwoFactorCodeRequired:   {401, "Two-factor code required", "The password was right and the account signs in with a second factor: send the sign-in again with `two_factor_code`, the authenticator's current code or an unused recovery code."},
	CodeInvalidTwoFactorCode:    {401, "Invalid two-factor code", "The two-factor code is wrong, expired (codes last 30 seconds, one step of grace either side) or already used; it counts as a failed sign-in."},
	CodeSessionExpired:          {401, "Session expired", "The refresh token, or the browser session, was not used for longer than the organization's `settings.security.session_timeout_minutes`; sign in again."},
	CodeAPIKeyOwnerAccessLost:   {401, "API key's owner lost access", "The organization API key belongs to a member (its creator, or the admin who last re-assigned it) who is no longer an active admin or owner of its organization: removed, demoted, disabled or deleted. The key is suspended, not revoked: an admin re-assigns it to themselves with POST /api/v1/organizations/{organization_id}/api-keys/{key_id}/assign, and it works again with the same secret (or revokes it)."},
	CodeCSRFCheckFailed:         {403, "CSRF check failed", "An unsafe request (POST, PUT, PATCH, DELETE) authenticated by the browser session cookie must send the session's `csrf_token` as `X-CSRF-Token` and come from this service's own origin (`Origin`, `Sec-Fetch-Site`); a WebSocket opened with the cookie must come from this origin too. Nothing was changed. Requests with a bearer token or API key are not concerned."},
	CodeUpgradeRequired:         {426, "WebSocket upgrade required", "The endpoint is a WebSocket (a dataset's `/data/ws`): open it with a WebSocket client, an HTTP/1.1 GET with `Connection: Upgrade` and `Upgrade: websocket`. `/data/stream` serves the same change stream as Server-Sent Events."},
	CodeViewBroken:              {409, "View broken", "The saved view no longer runs: a change to a dataset (or view) it reads broke it. `details` has `view_id` and `error`, what changed; redefine the view (PATCH .../views/{view_id}) to fix it."},
	CodeDescriptionUnavailable:  {409, "Table cannot be described", "The table (typically a connected database's) has something its OpenAPI description cannot express, so its description and record API are not served, nor its records embedded in another table's (`include`, `expand`); `details.table` and `details.reason` say what. Change the table (or leave it out of the connection)."},
}

// Codes of parts of an answer rather than of an answer: a bulk request's operations that did
// not apply, a WebSocket message the server could not read.
const (
	CodeRolledBack     Code = "ROLLED_BACK"
	CodeSkipped        Code = "SKIPPED"
	CodeInvalidMessage Code = "INVALID_MESSAGE"
)
