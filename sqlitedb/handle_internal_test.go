package sqlitedb

import "testing"

// transactionKeyword names the statements that begin or end a
// transaction, however they are spelled, and nothing else: not ROLLBACK
// TO, savepoints, or the keywords inside other statements.
func TestTransactionKeyword(t *testing.T) {
	for _, c := range []struct{ query, want string }{
		{`BEGIN`, "BEGIN"},
		{`begin`, "BEGIN"},
		{`BEGIN IMMEDIATE`, "BEGIN"},
		{`Begin Deferred Transaction`, "BEGIN"},
		{`BEGIN EXCLUSIVE;`, "BEGIN"},
		{`COMMIT`, "COMMIT"},
		{`commit transaction`, "COMMIT"},
		{`END`, "END"},
		{`end transaction`, "END"},
		{`ROLLBACK`, "ROLLBACK"},
		{`rollback;`, "ROLLBACK"},
		{`rollback transaction`, "ROLLBACK"},
		{`ROLLBACK TRANSACTION;`, "ROLLBACK"},
		// Comments, white space and empty statements before the keyword.
		{" -- comment\n commit", "COMMIT"},
		{`/* x */ ROLLBACK`, "ROLLBACK"},
		{"\t\r\n\fEND", "END"},
		{";; BEGIN", "BEGIN"},
		{"/* a */ -- b\n/* c */COMMIT", "COMMIT"},
		{"/**/BEGIN", "BEGIN"},
		// Rolling back to a savepoint ends nothing.
		{`ROLLBACK TO a`, ""},
		{`rollback to savepoint a`, ""},
		{`ROLLBACK TRANSACTION TO a`, ""},
		{`rollback transaction to savepoint a`, ""},
		{"ROLLBACK\n\tTO a", ""},
		{"ROLLBACK /* c */ TRANSACTION -- d\n TO a", ""},
		{`SAVEPOINT a`, ""},
		{`RELEASE a`, ""},
		{`release savepoint a`, ""},
		// The words elsewhere, or as the start of a longer word.
		{`SELECT 'COMMIT'`, ""},
		{`INSERT INTO t (s) VALUES ('BEGIN')`, ""},
		{`UPDATE t SET "end" = 1`, ""},
		{`-- COMMIT` + "\nSELECT 1", ""},
		{`/* ROLLBACK */ SELECT 1`, ""},
		{`BEGINNING`, ""},
		{`ENDS`, ""},
		{`COMMITTED`, ""},
		{`ROLLBACKS`, ""},
		{`EXPLAIN COMMIT`, ""},
		// Nothing at all.
		{``, ""},
		{`   `, ""},
		{`-- only a comment`, ""},
		{`/* unterminated COMMIT`, ""},
		{`;`, ""},
	} {
		if got := transactionKeyword(c.query); got != c.want {
			t.Errorf("transactionKeyword(%q) = %q, want %q", c.query, got, c.want)
		}
	}
}
