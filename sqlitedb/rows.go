//go:build cgo

package sqlitedb

/*
#include "capi.h"

// put_le writes the n low bytes of v at p, least significant first.
static void put_le(unsigned char *p, uint64_t v, int n) {
	for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

// lite_fill steps s and appends each row to buf[*used:cap], column by
// column: one type byte, then 8 bytes for an integer or a float, or a
// 4-byte length and the bytes for text and blobs, nothing for NULL.
// It returns SQLITE_DONE when the rows are all read, SQLITE_ROW when the
// next row does not fit (the row stays current: call again with a larger
// buffer and pending set), or an error code. *need is then the size of
// that row.
static int lite_fill(sqlite3_stmt *s, unsigned char *buf, int64_t cap, int64_t *used, int pending, int64_t *need) {
	int n = sqlite3_column_count(s);
	for (;;) {
		int rc = pending ? LITE_ROW : sqlite3_step(s);
		pending = 0;
		if (rc != LITE_ROW) {
			return rc;
		}
		int64_t at = *used;
		for (int i = 0; i < n; i++) {
			int t = sqlite3_column_type(s, i);
			if (t == LITE_INTEGER || t == LITE_FLOAT) {
				if (at + 9 <= cap) {
					buf[at] = (unsigned char)t;
					if (t == LITE_INTEGER) {
						put_le(buf + at + 1, (uint64_t)sqlite3_column_int64(s, i), 8);
					} else {
						double d = sqlite3_column_double(s, i);
						uint64_t v;
						memcpy(&v, &d, 8);
						put_le(buf + at + 1, v, 8);
					}
				}
				at += 9;
			} else if (t == LITE_TEXT || t == LITE_BLOB) {
				const void *p = t == LITE_TEXT ? (const void *)sqlite3_column_text(s, i) : sqlite3_column_blob(s, i);
				int len = sqlite3_column_bytes(s, i);
				if (at + 5 + len <= cap) {
					buf[at] = (unsigned char)t;
					put_le(buf + at + 1, (uint64_t)len, 4);
					if (len) memcpy(buf + at + 5, p, len);
				}
				at += 5 + len;
			} else {
				if (at + 1 <= cap) buf[at] = LITE_NULL;
				at += 1;
			}
		}
		if (at > cap) {
			*need = at - *used;
			return LITE_ROW;
		}
		*used = at;
	}
}
*/
import "C"

import (
	"database/sql"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// fillBuffers keeps the handles' query buffers between queries: a page's
// rows are copied out once, into one string, and the buffer reused.
var fillBuffers = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// query runs query and copies all its rows out of SQLite.
func (c *driverConn) query(query string, args []any) (*Rows, error) {
	s, err := c.prepared(query)
	if err != nil {
		return nil, err
	}
	if err := c.bind(s, args); err != nil {
		return nil, err
	}
	bp := fillBuffers.Get().(*[]byte)
	defer fillBuffers.Put(bp)
	buf := *bp
	used, need := &c.fill.used, &c.fill.need
	*used, *need = 0, 0
	pending := C.int(0)
	for {
		rc := C.lite_fill(s, (*C.uchar)(unsafe.Pointer(&buf[0])), C.int64_t(len(buf)), used, pending, need)
		if rc == C.LITE_DONE {
			break
		}
		if rc != C.LITE_ROW {
			err := c.lastError(rc)
			C.sqlite3_reset(s)
			return nil, err
		}
		grown := make([]byte, max(2*len(buf), int(*used+*need)))
		copy(grown, buf[:*used])
		buf, *bp, pending = grown, grown, 1
	}
	C.sqlite3_reset(s)
	r := &Rows{data: string(buf[:*used]), ncol: int(C.sqlite3_column_count(s))}
	if r.ncol <= len(r.colsIn) {
		r.cols = r.colsIn[:r.ncol]
	} else {
		r.cols = make([]int32, r.ncol)
	}
	return r, nil
}

// Rows are the rows Rx.Query read. Next moves to the next row; Scan copies
// its columns into variables.
type Rows struct {
	data string  // the rows, encoded as lite_fill writes them
	pos  int     // where the next row starts in data
	ncol int     // columns per row
	cols []int32 // where each column of the current row starts
	// colsIn holds cols for a query of up to 16 columns, saving it an
	// allocation of its own.
	colsIn [16]int32
}

// Next moves to the next row and reports whether there is one.
func (r *Rows) Next() bool {
	if r.pos >= len(r.data) {
		return false
	}
	at := r.pos
	for i := range r.ncol {
		r.cols[i] = int32(at)
		switch r.data[at] {
		case C.LITE_INTEGER, C.LITE_FLOAT:
			at += 9
		case C.LITE_TEXT, C.LITE_BLOB:
			at += 5 + int(r.le(int32(at)+1, 4))
		default:
			at++
		}
	}
	r.pos = at
	return true
}

// textAt is column i of the current row as a string ("" for NULL). It shares
// memory with the other strings of this Rows, so it costs no allocation.
func (r *Rows) textAt(i int) string {
	at := r.cols[i]
	switch r.data[at] {
	case C.LITE_TEXT, C.LITE_BLOB:
		n := int(r.le(at+1, 4))
		return r.data[at+5 : int(at)+5+n]
	case C.LITE_INTEGER:
		return fmt.Sprint(int64(r.u64(at)))
	case C.LITE_FLOAT:
		return fmt.Sprint(math.Float64frombits(r.u64(at)))
	}
	return ""
}

func (r *Rows) u64(at int32) uint64 { return r.le(at+1, 8) }

// le reads n bytes at data[at:] as a little-endian number.
func (r *Rows) le(at int32, n int) uint64 {
	var v uint64
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | uint64(r.data[int(at)+i])
	}
	return v
}

// Err is always nil: Query reports every error itself, having read all the
// rows before it returns. It is here so Rows can stand where *sql.Rows does.
func (r *Rows) Err() error { return nil }

// Close releases nothing (the rows are already out of SQLite); it is here
// so Rows can stand where *sql.Rows does.
func (r *Rows) Close() error { return nil }

// Scan copies the current row's columns into dest, one per column, as
// database/sql's Scan does for these types: *int64, *int, *int32, *bool,
// *float64, *string, *[]byte (a copy; nil for NULL), *any, and any
// sql.Scanner (given int64, float64, string, []byte or nil). A NULL into a
// number, bool, string or time is an error, as in database/sql. Strings
// share one allocation per Query; only a sql.Scanner or *any costs one per
// column.
//
// A *time.Time, *sql.NullTime or *sql.Null[time.Time] takes text in
// TimeFormat (what a time.Time argument stores) or in the forms SQLite's
// date functions write ("2006-01-02 15:04:05", with or without fractions
// of a second, a "T", a zone or "Z"; or a date alone), read as UTC when it
// names no zone, or an integer of seconds since 1970 (unixepoch()).
func (r *Rows) Scan(dest ...any) error {
	if len(dest) != r.ncol {
		return fmt.Errorf("sqlitedb: Scan wants %d destinations, got %d", r.ncol, len(dest))
	}
	for i, d := range dest {
		if err := r.scanColumn(i, d); err != nil {
			return fmt.Errorf("sqlitedb: Scan column %d: %w", i, err)
		}
	}
	return nil
}

func (r *Rows) scanColumn(i int, d any) error {
	t := r.data[r.cols[i]]
	if t == C.LITE_NULL {
		switch d := d.(type) {
		case *[]byte:
			*d = nil
			return nil
		case *any:
			*d = nil
			return nil
		case sql.Scanner:
			return d.Scan(nil)
		}
		return fmt.Errorf("NULL into %T", d)
	}
	switch d := d.(type) {
	case *time.Time:
		v, err := r.timeAt(i, t)
		*d = v
		return err
	case *sql.NullTime:
		v, err := r.timeAt(i, t)
		d.Time, d.Valid = v, err == nil
		return err
	case *sql.Null[time.Time]:
		v, err := r.timeAt(i, t)
		d.V, d.Valid = v, err == nil
		return err
	case *int64:
		return r.integer(i, t, d)
	case *int:
		var n int64
		err := r.integer(i, t, &n)
		*d = int(n)
		return err
	case *int32:
		var n int64
		err := r.integer(i, t, &n)
		if n < math.MinInt32 || n > math.MaxInt32 {
			return fmt.Errorf("%d does not fit an int32", n)
		}
		*d = int32(n)
		return err
	case *bool:
		var n int64
		err := r.integer(i, t, &n)
		*d = n != 0
		return err
	case *float64:
		switch t {
		case C.LITE_FLOAT:
			*d = math.Float64frombits(r.u64(r.cols[i]))
		case C.LITE_INTEGER:
			*d = float64(int64(r.u64(r.cols[i])))
		default:
			return fmt.Errorf("text into %T", d)
		}
		return nil
	case *string:
		*d = r.textAt(i)
		return nil
	case *[]byte:
		*d = []byte(r.textAt(i))
		return nil
	case *any:
		*d = r.value(i, t)
		return nil
	case sql.Scanner:
		return d.Scan(r.value(i, t))
	}
	return fmt.Errorf("unsupported destination %T", d)
}

func (r *Rows) integer(i int, t byte, d *int64) error {
	if t != C.LITE_INTEGER {
		return fmt.Errorf("want an integer, the column holds type %d", t)
	}
	*d = int64(r.u64(r.cols[i]))
	return nil
}

// timeAt is column i, of type t, as a time: text in one of timeFormats (a
// trailing "Z" is UTC), or an integer of Unix seconds.
func (r *Rows) timeAt(i int, t byte) (time.Time, error) {
	switch t {
	case C.LITE_INTEGER:
		return time.Unix(int64(r.u64(r.cols[i])), 0).UTC(), nil
	case C.LITE_TEXT:
		s := strings.TrimSuffix(r.textAt(i), "Z")
		for _, f := range timeFormats {
			if v, err := time.ParseInLocation(f, s, time.UTC); err == nil {
				if _, off := v.Zone(); off == 0 {
					v = v.UTC()
				}
				return v, nil
			}
		}
		return time.Time{}, fmt.Errorf("%.40q is not a time (want TimeFormat, what SQLite's date functions write, or Unix seconds)", s)
	}
	return time.Time{}, fmt.Errorf("a column of type %d into a time (want text or Unix seconds)", t)
}

// value is column i as database/sql's driver would give it.
func (r *Rows) value(i int, t byte) any {
	switch t {
	case C.LITE_INTEGER:
		return int64(r.u64(r.cols[i]))
	case C.LITE_FLOAT:
		return math.Float64frombits(r.u64(r.cols[i]))
	case C.LITE_TEXT:
		return r.textAt(i)
	case C.LITE_BLOB:
		return []byte(r.textAt(i))
	}
	return nil
}

// result is what Exec reports.
type result struct{ changes, lastID int64 }

func (r result) LastInsertId() (int64, error) { return r.lastID, nil }
func (r result) RowsAffected() (int64, error) { return r.changes, nil }

// Row is QueryRow's result.
type Row struct {
	rows *Rows
	err  error
}

// Scan copies the first row's columns into dest (as Rows.Scan does), or
// returns the query's error, or sql.ErrNoRows if it returned no row.
func (r Row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	if !r.rows.Next() {
		return sql.ErrNoRows
	}
	return r.rows.Scan(dest...)
}

// Err is the query's error, if any.
func (r Row) Err() error { return r.err }
