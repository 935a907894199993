package postgres

import (
	"net/url"
	"strings"
)

// redacted replaces every secret in a printed URL: what url.URL.Redacted
// puts in place of a password, used for the query's secrets too.
const redacted = "xxxxx"

// secretParam reports whether a connection parameter holds a secret:
// password and sslpassword by name, and any whose name says pass, secret,
// token or key (sslkey is only a path, but hiding it costs nothing).
func secretParam(name string) bool {
	n := strings.ToLower(name)
	for _, word := range []string{"pass", "secret", "token", "key"} {
		if strings.Contains(n, word) {
			return true
		}
	}
	return false
}

// RedactURL returns a PostgreSQL URL fit to print: the password in its
// user info (by url.URL.Redacted) and the value of every secret query
// parameter are replaced by xxxxx. Anything that does not parse as a URL
// is not printed at all. Every message, report and log line that shows a
// database URL goes through it.
func RedactURL(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		return "PostgreSQL database"
	}
	q := u.Query()
	changed := false
	for k, vs := range q {
		if secretParam(k) {
			for i := range vs {
				vs[i] = redacted
			}
			changed = true
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// secretsOf lists the secret values in dsn, as written and as decoded.
func secretsOf(dsn string) []string {
	var out []string
	add := func(raw string) {
		if raw == "" {
			return
		}
		out = append(out, raw)
		if dec, err := url.QueryUnescape(raw); err == nil && dec != raw {
			out = append(out, dec)
		}
	}
	rest, _ := strings.CutPrefix(dsn, "postgres://")
	rest, _ = strings.CutPrefix(rest, "postgresql://")
	if at := strings.LastIndex(strings.SplitN(rest, "/", 2)[0], "@"); at >= 0 {
		if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
			add(pw)
		}
	}
	if _, query, ok := strings.Cut(dsn, "?"); ok {
		for _, kv := range strings.FieldsFunc(query, func(r rune) bool { return r == '&' || r == ';' }) {
			if k, v, ok := strings.Cut(kv, "="); ok && secretParam(k) {
				add(v)
			}
		}
	}
	return out
}

// redactError hides in err's message every secret of dsn, for errors from
// libraries that quote the connection string (a URL that does not even
// parse cannot go through RedactURL). The error it returns still wraps
// err, so errors.Is and errors.As see what happened (a timeout, a refused
// connection, a pgconn error); only its message is rewritten.
func redactError(err error, dsn string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, s := range secretsOf(dsn) {
		msg = strings.ReplaceAll(msg, s, redacted)
	}
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// redactedError is an error whose message has a connection string's
// secrets hidden, wrapping the original. Error gives only the hidden
// message; whoever unwraps it to print the cause prints the secret, so
// nothing here does.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
