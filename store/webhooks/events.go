// Package webhooks delivers the outbox's events to the organizations' webhook endpoints, on
// the Standard Webhooks specification (standardwebhooks.com): a dispatcher fans each event out
// to the endpoints that subscribe to it, and sends every endpoint's deliveries in order, signed,
// retried with backoff, under a lease in PostgreSQL so that any number of replicas share the
// work, none sends a delivery another is sending, and a crash resends rather than loses.
package webhooks

import (
	"slices"
	"strings"
)

// Kinds are the webhook event kinds, by area.
var Kinds = []string{
	"organization.created", "organization.updated", "organization.deleted", "user.invited", "user.joined", "user.removed",
	"team.created", "team.updated", "team.deleted",
	"dataset.created", "dataset.processing", "dataset.ready", "dataset.failed", "dataset.deleted",
	"query.started", "query.completed", "query.failed", "query.saved",
}

// PingKind is the type of the event POST .../webhooks/{id}/test sends; endpoints get it
// whatever they subscribe to.
const PingKind = "webhook.ping"

// Matches reports whether an endpoint subscribed to patterns (kinds, area wildcards such as
// dataset.*, or *) receives an event of kind.
func Matches(patterns []string, kind string) bool {
	area, _, _ := strings.Cut(kind, ".")
	return slices.ContainsFunc(patterns, func(p string) bool { return p == "*" || p == kind || p == area+".*" })
}

// Unknown are those of patterns that are neither a kind nor a wildcard of kinds.
func Unknown(patterns []string) []string {
	var bad []string
	for _, p := range patterns {
		if !slices.ContainsFunc(Kinds, func(k string) bool { return Matches([]string{p}, k) }) {
			bad = append(bad, p)
		}
	}
	return bad
}
