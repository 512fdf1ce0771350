package config

import (
	"regexp"
	"testing"
)

// ajvEmail is the email format of ajv-formats ("fast"), which Prism and most JavaScript
// validators apply to the login body's `format: email`.
var ajvEmail = regexp.MustCompile(`(?i)^[a-z0-9!#$%&'*+/=?^_` + "`" + `{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_` + "`" + `{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)

// TestDefaultAdminEmailIsAnEmail: the documented first login must pass the description's own
// format check in third-party clients (admin@localhost did not).
func TestDefaultAdminEmailIsAnEmail(t *testing.T) {
	if !ajvEmail.MatchString(DefaultAdminEmail) {
		t.Fatalf("%s fails format: email as ajv checks it", DefaultAdminEmail)
	}
	if ajvEmail.MatchString("admin@localhost") {
		t.Fatal("the check is too lax to tell")
	}
}

// TestLoadSizesAndDurations: byte and duration settings are read, and bad ones refused.
func TestLoadSizesAndDurations(t *testing.T) {
	t.Setenv("DP_UPLOAD_MIN_RATE", "0")
	t.Setenv("DP_UPLOAD_RATE_WINDOW", "45s")
	t.Setenv("DP_STREAM_HEARTBEAT", "5s")
	t.Setenv("DP_QUERY_RESULT_BYTES", "2048")
	t.Setenv("DP_SESSION_MAX_AGE", "12h")
	c, err := Load(nil, nil)
	if err != nil || c.UploadMinRate != 0 || c.UploadRateWindow.Seconds() != 45 || c.StreamHeartbeat.Seconds() != 5 || c.QueryResultBytes != 2048 ||
		c.SessionMaxAge.Hours() != 12 {
		t.Fatalf("%+v %v", c, err)
	}
	for name, v := range map[string]string{"DP_QUERY_RESULT_BYTES": "1000", "DP_UPLOAD_MIN_RATE": "-1", "DP_UPLOAD_RATE_WINDOW": "0s", "DP_MAX_BODY_BYTES": "0",
		"DP_SESSION_MAX_AGE": "-1h"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, v)
			if _, err := Load(nil, nil); err == nil {
				t.Fatalf("%s=%s accepted", name, v)
			}
		})
	}
}

// TestLoadDatabaseURLs: standbys are a comma-separated list, and neither a direct URL nor
// standbys go without DATABASE_URL (the embedded cluster has no pooler and no standby).
func TestLoadDatabaseURLs(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://pooler/db")
	t.Setenv("DATABASE_DIRECT_URL", "postgres://primary/db")
	t.Setenv("DATABASE_READ_URL", "postgres://s1/db, postgres://s2/db,")
	t.Setenv("DP_READ_MAX_LAG", "3s")
	c, err := Load(nil, nil)
	if err != nil || c.DatabaseDirectURL != "postgres://primary/db" || len(c.DatabaseReadURLs) != 2 || c.DatabaseReadURLs[1] != "postgres://s2/db" ||
		c.ReadMaxLag.Seconds() != 3 {
		t.Fatalf("%+v %v", c, err)
	}
	t.Setenv("DATABASE_URL", "")
	if _, err := Load(nil, nil); err == nil {
		t.Fatal("standbys without DATABASE_URL accepted")
	}
}
