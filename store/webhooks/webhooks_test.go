package webhooks

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

func TestMatches(t *testing.T) {
	for _, c := range []struct {
		patterns []string
		kind     string
		want     bool
	}{
		{[]string{"*"}, "dataset.ready", true},
		{[]string{"dataset.*"}, "dataset.ready", true},
		{[]string{"dataset.*"}, "datasets.ready", false},
		{[]string{"data.*"}, "dataset.ready", false},
		{[]string{"dataset.ready"}, "dataset.ready", true},
		{[]string{"dataset.ready"}, "dataset.failed", false},
		{[]string{"query.*", "team.created"}, "team.created", true},
		{nil, "team.created", false},
	} {
		if got := Matches(c.patterns, c.kind); got != c.want {
			t.Errorf("Matches(%v, %s) = %v", c.patterns, c.kind, got)
		}
	}
	if bad := Unknown([]string{"*", "dataset.*", "team.deleted", "robots.*", "dataset.exploded", "webhook.ping"}); !slices.Equal(bad,
		[]string{"robots.*", "dataset.exploded", "webhook.ping"}) {
		t.Errorf("Unknown: %v", bad)
	}
}

// The signature is what the Standard Webhooks reference library computes and verifies, one
// per key, space separated.
func TestSignatureAgainstReference(t *testing.T) {
	secrets := []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_" + strings.Repeat("QUJD", 8)}
	at := time.Unix(1700000000, 0)
	body := []byte(`{"type":"dataset.ready","timestamp":"2023-11-14T22:13:20Z","data":{"dataset_id":"ds_1"}}`)
	var keys [][]byte
	for _, s := range secrets {
		k, err := key(s)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	sig := Signature("msg_1", at, body, keys...)
	parts := strings.Fields(sig)
	if len(parts) != 2 {
		t.Fatalf("signature %q: want two", sig)
	}
	for i, s := range secrets {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := wh.Sign("msg_1", at, body)
		if err != nil || ref != parts[i] {
			t.Fatalf("secret %d: ours %q, reference %q (%v)", i, parts[i], ref, err)
		}
		h := http.Header{"Webhook-Id": {"msg_1"}, "Webhook-Timestamp": {"1700000000"}, "Webhook-Signature": {sig}}
		if err := wh.VerifyIgnoringTimestamp(body, h); err != nil {
			t.Fatalf("secret %d: the reference does not verify: %v", i, err)
		}
		if err := wh.VerifyIgnoringTimestamp(append(body, ' '), h); err == nil {
			t.Fatal("a changed body verifies")
		}
	}
	if _, err := key("whsec_not base64!"); err == nil {
		t.Fatal("a bad secret was taken")
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for h, want := range map[string]time.Duration{
		"":                              0,
		"120":                           2 * time.Minute,
		" 7 ":                           7 * time.Second,
		"-5":                            0,
		"999999":                        24 * time.Hour,
		"soon":                          0,
		"Fri, 02 Jan 2026 03:09:05 GMT": 5 * time.Minute,
	} {
		if got := retryAfter(h, now); got != want {
			t.Errorf("retryAfter(%q) = %s, want %s", h, got, want)
		}
	}
}

// Failed attempts follow the schedule (±20%) and give up after its last step; a redelivery
// starts the schedule over; Retry-After replaces the step.
func TestFailedSchedule(t *testing.T) {
	d := &Dispatcher{}
	at := time.Unix(0, 0)
	for n := 1; n <= len(Schedule)+1; n++ {
		a := d.failed(attempt{N: n, At: at}, &due{Attempts: n - 1}, "answered 503", true, 0)
		if n > len(Schedule) {
			if a.Outcome != outcomeFailed || a.Next != nil {
				t.Fatalf("attempt %d: %s, want given up", n, a.Outcome)
			}
			continue
		}
		wait := a.Next.Sub(at)
		if a.Outcome != outcomeRetry || wait < Schedule[n-1]*8/10 || wait > Schedule[n-1]*12/10 {
			t.Fatalf("attempt %d: %s in %s, want about %s", n, a.Outcome, wait, Schedule[n-1])
		}
	}
	if a := d.failed(attempt{N: 9, At: at}, &due{Attempts: 8, ScheduleFrom: 8}, "x", true, 0); a.Outcome != outcomeRetry {
		t.Fatal("a redelivered delivery has no retries left")
	}
	if a := d.failed(attempt{N: 1, At: at}, &due{}, "x", true, time.Hour); a.Next.Sub(at) != time.Hour {
		t.Fatalf("Retry-After: next in %s", a.Next.Sub(at))
	}
	if a := d.failed(attempt{N: 1, At: at}, &due{}, "answered 410", false, 0); a.Outcome != outcomeFailed {
		t.Fatal("a 410 is retried")
	}
}
