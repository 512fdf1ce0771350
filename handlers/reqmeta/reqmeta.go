// Package reqmeta carries facts about the HTTP request (id, client address, user agent, URL)
// to code that sees only a context: audit entries and pagination links.
package reqmeta

import (
	"context"
	"net/http"
	"net/url"
)

// Meta describes the current request.
type Meta struct {
	RequestID string
	IP        string
	UserAgent string
	Path      string
	Host      string // the Host the request was sent to (same-origin checks)
	Query     url.Values
	Accept    string // the Accept header (content negotiation in strict handlers)
	// Header is the request's header, for the strict handlers that negotiate (metrics) or
	// answer conditionally (documentation assets).
	Header http.Header
	// AllowLongBody is set on upload operations: their handler calls it once the caller is
	// allowed to upload, and only then does the body get more than the server's read timeout
	// (a minimum transfer rate instead).
	AllowLongBody func()
}

type key struct{}

// With stores m in ctx.
func With(ctx context.Context, m *Meta) context.Context { return context.WithValue(ctx, key{}, m) }

// From returns the request's Meta (an empty one outside a request).
func From(ctx context.Context) *Meta {
	if m, ok := ctx.Value(key{}).(*Meta); ok {
		return m
	}
	return &Meta{Query: url.Values{}}
}
