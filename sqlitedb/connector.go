package sqlitedb

import (
	"context"
	"database/sql/driver"

	"github.com/mattn/go-sqlite3"
)

// connector opens go-sqlite3 connections that the row reader can use.
type connector struct {
	dsn    string
	driver *sqlite3.SQLiteDriver
}

// NewConnector returns a connector for sql.OpenDB that opens dsn with
// go-sqlite3, runs hook on each new connection, and hands out connections
// that Query can read from.
func NewConnector(dsn string, hook func(*sqlite3.SQLiteConn) error) driver.Connector {
	return &connector{dsn: dsn, driver: &sqlite3.SQLiteDriver{ConnectHook: hook}}
}

func (c *connector) Connect(context.Context) (driver.Conn, error) {
	if err := installOnce(); err != nil {
		return nil, err
	}
	dc, err := c.driver.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	conn, err := newDriverConn(dc.(*sqlite3.SQLiteConn))
	if err != nil {
		dc.Close()
		return nil, err
	}
	return conn, nil
}

func (c *connector) Driver() driver.Driver { return c.driver }
