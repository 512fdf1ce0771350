// Package apierr is the domain error type: handlers return it, the central error handler
// renders it in the shape of its status (nested envelope, flat 401/403, dashboard shape).
package apierr

import (
	"fmt"
	"net/http"
)

// FieldError is one entry of a VALIDATION_ERROR's details.
type FieldError struct {
	Field   string `json:"field"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error is an error with an HTTP status, a stable code and optional details. Details is
// []FieldError for validation errors and map[string]any otherwise. Extra holds the top-level
// fields of the flat 401/403 shape (required_permission, required_role, your_role).
type Error struct {
	Status  int
	Code    Code
	Message string
	Details any
	Extra   map[string]string
	Headers map[string]string
	Cause   error // what the answer stands for, for errors.Is and the log; never rendered
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }
func (e *Error) Unwrap() error { return e.Cause }

// New builds an error with a status, code and message.
func New(status int, code Code, message string) *Error {
	return &Error{Status: status, Code: code, Message: message}
}

// WithDetails returns e with context details.
func (e *Error) WithDetails(d map[string]any) *Error { e.Details = d; return e }

// Validation is 400 VALIDATION_ERROR with one entry per field.
func Validation(fields ...FieldError) *Error {
	msg := "the request is invalid"
	if len(fields) == 1 {
		msg = fields[0].Field + ": " + fields[0].Message
	} else if len(fields) > 1 {
		msg = fmt.Sprintf("the request has %d invalid fields", len(fields))
	}
	return &Error{Status: http.StatusBadRequest, Code: CodeValidationError, Message: msg, Details: fields}
}

// Field is a one-field validation error.
func Field(field, code, message string) *Error {
	return Validation(FieldError{Field: field, Code: code, Message: message})
}

// NotFound is 404 NOT_FOUND naming the kind of resource.
func NotFound(kind, id string) *Error {
	return (&Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: kind + " not found"}).
		WithDetails(map[string]any{"resource": kind, "id": id})
}

// Conflict is 409 CONFLICT on a field.
func Conflict(field, message string) *Error {
	return (&Error{Status: http.StatusConflict, Code: CodeConflict, Message: message}).
		WithDetails(map[string]any{"field": field})
}

// AuthRequired is 401 AUTH_REQUIRED.
func AuthRequired(message string) *Error {
	return &Error{Status: http.StatusUnauthorized, Code: CodeAuthRequired, Message: message}
}

// TokenExpired is 401 TOKEN_EXPIRED.
func TokenExpired() *Error {
	return &Error{Status: http.StatusUnauthorized, Code: CodeTokenExpired, Message: "the access token has expired; refresh it or sign in again"}
}

// PermissionDenied is 403 PERMISSION_DENIED naming the missing permission.
func PermissionDenied(permission string) *Error {
	return &Error{Status: http.StatusForbidden, Code: CodePermissionDenied,
		Message: "this action needs the permission " + permission,
		Extra:   map[string]string{"required_permission": permission}}
}

// InsufficientRole is 403 INSUFFICIENT_PERMISSIONS naming the organization role needed.
func InsufficientRole(required, yours string) *Error {
	return &Error{Status: http.StatusForbidden, Code: CodeInsufficientPermissions,
		Message: "this action needs the organization role " + required + " (yours is " + yours + ")",
		Extra:   map[string]string{"required_role": required, "your_role": yours}}
}

// Forbidden is a 403 PERMISSION_DENIED without a single permission to name.
func Forbidden(message string) *Error {
	return &Error{Status: http.StatusForbidden, Code: CodePermissionDenied, Message: message}
}

// FileTooLarge is 413 FILE_TOO_LARGE for an upload over the limit.
func FileTooLarge(provided, max int64) *Error {
	return (&Error{Status: http.StatusRequestEntityTooLarge, Code: CodeFileTooLarge,
		Message: fmt.Sprintf("the file is larger than the limit of %s", HumanBytes(max))}).
		WithDetails(map[string]any{"provided_size": provided, "max_size": max, "max_size_human": HumanBytes(max)})
}

// HumanBytes writes a size in binary units the way people say them: 1073741824 is "1 GB".
func HumanBytes(n int64) string {
	units := []string{"bytes", "KB", "MB", "GB", "TB"}
	f, i := float64(n), 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if f == float64(int64(f)) {
		return fmt.Sprintf("%d %s", int64(f), units[i])
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}
