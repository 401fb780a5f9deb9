package database

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://axlr:s3cret@db:5432/axlr?sslmode=disable": "postgres://axlr:xxxxx@db:5432/axlr?sslmode=disable",
		"postgres://axlr@db/axlr":                             "postgres://axlr@db/axlr",
		"host=db user=axlr password=s3cret dbname=axlr":       "host=db user=axlr password=xxxxx dbname=axlr",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOpenRefusesBadInput(t *testing.T) {
	if _, err := Open(t.Context(), "postgres://db/axlr", "Bad-Schema"); err == nil || !strings.Contains(err.Error(), "not a schema name") {
		t.Errorf("a bad schema name: %v", err)
	}
	_, err := Open(t.Context(), "postgres://axlr:s3cret@db:notaport/axlr", "axlr_made")
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("a bad address: %v (the password must not show)", err)
	}
}

func TestPassword(t *testing.T) {
	if got := Password("postgres://axlr:s3cret@db:5432/axlr"); got != "s3cret" {
		t.Errorf("Password = %q", got)
	}
	if got := Password(""); got != "" {
		t.Errorf("Password of nothing = %q", got)
	}
}
