// Package nanotime is how both stores keep times: INTEGER Unix nanoseconds,
// not DATETIME text. A listing of a hundred rows then reads a hundred
// integers instead of parsing a hundred strings (the SQLite driver tried up
// to nine layouts per value), and a write binds an integer instead of
// formatting one. Nanoseconds because that is the precision of the text it
// replaced, so every stored time converted exactly; the range is the years
// 1678–2262. The zero time, which the domain uses for "never", is NULL.
package nanotime

import (
	"fmt"
	"math"
	"time"
)

// Value is t as the columns hold it: Unix nanoseconds, or nil (NULL) for
// the zero time.
func Value(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

// Bound is t as a bound to compare stored times with: the zero time is
// before every stored time.
func Bound(t time.Time) int64 {
	if t.IsZero() {
		return math.MinInt64
	}
	return t.UnixNano()
}

// Time is the time.Time, in UTC, of Unix nanoseconds as the columns hold
// them.
func Time(nanos int64) time.Time { return time.Unix(0, nanos).UTC() }

// Into scans a time column (Unix nanoseconds, or NULL for the zero time)
// into *t: pass it to Scan.
func Into(t *time.Time) Column { return Column{t} }

// Column is Into's scanner.
type Column struct{ t *time.Time }

// Scan implements sql.Scanner.
func (c Column) Scan(v any) error {
	switch v := v.(type) {
	case int64:
		*c.t = Time(v)
	case nil:
		*c.t = time.Time{}
	default:
		return fmt.Errorf("a time column holds %T, want Unix nanoseconds", v)
	}
	return nil
}
