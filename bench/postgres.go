package bench

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/loremnews/loremnews/pgcluster"
	"github.com/loremnews/loremnews/postgres"
)

// PostgresInfo is what the report says of the PostgreSQL server.
type PostgresInfo struct {
	Where    string            `json:"where"`    // "throw-away cluster …" or the server's URL, without password
	Settings map[string]string `json:"settings"` // server_version and the settings that matter here
}

func needsPostgres(cfg Config) bool {
	for _, s := range cfg.Setups {
		if s.Postgres {
			return true
		}
	}
	return false
}

// preparePostgres starts a throw-away cluster unless cfg names a server,
// and records the server's settings in the report. stop stops the cluster.
func preparePostgres(ctx context.Context, cfg *Config, rep *Report) (stop func(), err error) {
	stop = func() {}
	info := &PostgresInfo{}
	if cfg.PostgresURL == "" {
		cfg.logf("postgres: starting a throw-away cluster (Unix socket only)")
		c, err := pgcluster.Start(ctx, pgcluster.Tuned)
		if err != nil {
			return nil, err
		}
		stop = func() {
			if err := c.Stop(); err != nil {
				cfg.logf("postgres: stop the cluster: %v", err)
			}
		}
		cfg.PostgresURL = c.URL
		info.Where = "a throw-away cluster on a Unix socket, started by bench on this machine with the settings below written to its postgresql.conf"
	} else {
		info.Where = "the server at " + postgres.RedactURL(cfg.PostgresURL)
	}
	if info.Settings, err = postgres.ReadSettings(ctx, cfg.PostgresURL); err != nil {
		stop()
		return nil, err
	}
	// The pool size is the served app's, not this probe's.
	info.Settings["pool_max_conns"] = "loremnews default, max(4, 4×GOMAXPROCS) per server process"
	rep.Postgres = info
	return stop, nil
}

var dbNameRe = regexp.MustCompile(`[^a-z0-9_]`)

// freshPostgresDatabase drops and creates the setup's database on the
// server and returns its URL.
func freshPostgresDatabase(ctx context.Context, adminURL, name string) (string, error) {
	db := "lorem_bench_" + dbNameRe.ReplaceAllString(name, "_")
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", fmt.Errorf("bench: connect to PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	for _, sql := range []string{`DROP DATABASE IF EXISTS ` + db + ` WITH (FORCE)`, `CREATE DATABASE ` + db} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return "", fmt.Errorf("bench: %s: %w", sql, err)
		}
	}
	return pgcluster.DatabaseURL(adminURL, db), nil
}
