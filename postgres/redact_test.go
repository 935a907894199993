package postgres

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"
)

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://ann:s3cret@db.example:5432/lorem":                                 "postgres://ann:xxxxx@db.example:5432/lorem",
		"postgres://ann@db.example/lorem?password=s3cret&sslmode=require":             "postgres://ann@db.example/lorem?password=xxxxx&sslmode=require",
		"postgresql://db.example/lorem?sslpassword=s3cret&sslkey=%2Fk.pem&user=ann":   "postgresql://db.example/lorem?sslkey=xxxxx&sslpassword=xxxxx&user=ann",
		"postgres://ann:p%40ss@db.example/lorem?PASSWORD=s3cret":                      "postgres://ann:xxxxx@db.example/lorem?PASSWORD=xxxxx",
		"postgres://postgres@/postgres?host=/tmp/pg&port=5432":                        "postgres://postgres@/postgres?host=/tmp/pg&port=5432",
		"postgres://ann@db.example/lorem?application_name=x&auth_token=s3cret&tz=UTC": "postgres://ann@db.example/lorem?application_name=x&auth_token=xxxxx&tz=UTC",
		"%%% not a URL s3cret": "PostgreSQL database",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}

// TestErrorsNeverPrintSecrets: a URL that pgx refuses, or a server that
// cannot be reached, gives an error without the password in it, whether
// the password is in the user info or in a query parameter.
func TestErrorsNeverPrintSecrets(t *testing.T) {
	for _, dsn := range []string{
		"postgres://ann:s3cret-pw@db.example/lorem?connect_timeout=soon",
		"postgres://ann@db.example/lorem?password=s3cret-pw&connect_timeout=soon",
		"postgres://ann@db.example/lorem?sslpassword=s3cret-pw&sslmode=bogus",
		"postgres://ann:s3cret%2Dpw@db.example/lorem?x=%zz",
	} {
		err := CheckURL(dsn)
		if err == nil {
			t.Fatalf("CheckURL(%q) accepted it", dsn)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("CheckURL error shows the secret: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, dsn := range []string{
		"postgres://ann:s3cret-pw@127.0.0.1:1/lorem?connect_timeout=2",
		"postgres://ann@127.0.0.1:1/lorem?password=s3cret-pw&connect_timeout=2",
	} {
		_, err := Open(ctx, Config{URL: dsn})
		if err == nil {
			t.Fatalf("Open(%q) connected to port 1", dsn)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open error shows the secret: %v", err)
		}
		if !strings.Contains(err.Error(), "127.0.0.1") {
			t.Errorf("Open error does not name the server: %v", err)
		}
	}
}

// TestRedactErrorKeepsTheChain: an error whose message quoted a secret
// reads redacted, and still is what it was underneath.
func TestRedactErrorKeepsTheChain(t *testing.T) {
	dsn := "postgres://ann:s3cret-pw@db.example/lorem?sslpassword=other-s3cret"
	var pathErr *fs.PathError
	for _, tc := range []struct {
		name string
		err  error
		is   func(error) bool
	}{
		{"deadline", fmt.Errorf("connect to %s: %w", dsn, context.DeadlineExceeded), func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }},
		{"path error", fmt.Errorf("%s: %w", dsn, &fs.PathError{Op: "open", Path: "/k.pem", Err: fs.ErrNotExist}), func(err error) bool {
			return errors.As(err, &pathErr) && errors.Is(err, fs.ErrNotExist)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := redactError(tc.err, dsn)
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("message shows a secret: %v", err)
			}
			if !strings.Contains(err.Error(), "ann:xxxxx@db.example") {
				t.Errorf("message %q lost what is not secret", err)
			}
			if !tc.is(err) {
				t.Errorf("the redacted error is no longer what it was: %v", err)
			}
		})
	}
	if err := errors.New("no secret here"); redactError(err, dsn) != err {
		t.Error("an error without a secret is not returned as it is")
	}
}
