package postgres

import (
	"fmt"
	"math"
	"time"
)

// Times are stored as INTEGER Unix nanoseconds (migration 0003), not as
// DATETIME text: a listing of a hundred rows then reads a hundred integers
// instead of parsing a hundred strings (the driver tried up to nine layouts
// per value), and a write binds an integer instead of formatting one.
// Nanoseconds because that is the precision of the text it replaced, so
// every stored time converted exactly; the range is the years 1678–2262.

// unixNanos is t as the columns hold it; the zero time, which the domain
// uses for "never", is NULL.
func unixNanos(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

// nanosBound is t as a bound to compare stored times with: the zero time
// is before every stored time.
func nanosBound(t time.Time) int64 {
	if t.IsZero() {
		return math.MinInt64
	}
	return t.UnixNano()
}

// timeOf is the time.Time, in UTC, of Unix nanoseconds as the columns hold
// them.
func timeOf(nanos int64) time.Time { return time.Unix(0, nanos).UTC() }

// timeColumn scans a time column (Unix nanoseconds, or NULL for the zero
// time) into *t.
type timeColumn struct{ t *time.Time }

func (c timeColumn) Scan(v any) error {
	switch v := v.(type) {
	case int64:
		*c.t = timeOf(v)
	case nil:
		*c.t = time.Time{}
	default:
		return fmt.Errorf("postgres: a time column holds %T, want Unix nanoseconds", v)
	}
	return nil
}
