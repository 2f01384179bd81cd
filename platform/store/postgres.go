package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// PostgreSQL is the dialect of PostgreSQL (through pgx's database/sql
// driver; see [OpenPostgres]). Reads that precede a write lock their rows
// (FOR UPDATE); a claim takes the oldest ready row no other claim holds
// (FOR UPDATE SKIP LOCKED); rows are numbered by sequences; a migration
// holds a transaction-scoped advisory lock so that processes starting on
// one schema together migrate it one at a time; and a transaction broken
// off by a deadlock or a serialization failure is run again.
var PostgreSQL = &Dialect{
	name:        "postgres",
	placeholder: dollar,
	forUpdate:   " FOR UPDATE",
	forShare:    " FOR SHARE",
	skipLocked:  " FOR UPDATE SKIP LOCKED",
	blob:        "BYTEA",
	bytewise:    ` COLLATE "C"`,
	nextSeq: func(table string) string {
		return "nextval('{t}" + table + "_seq')"
	},
	lockSchema: "SELECT pg_advisory_xact_lock(hashtext(current_schema() || '/{t}crux-sim-schema'))",
	steps: map[int][]string{
		2: {
			`CREATE SEQUENCE IF NOT EXISTS {t}tasks_seq`,
			`SELECT setval('{t}tasks_seq', COALESCE((SELECT MAX(seq) FROM {t}tasks), 0) + 1, false)`,
			`CREATE SEQUENCE IF NOT EXISTS {t}schedules_seq`,
			`SELECT setval('{t}schedules_seq', COALESCE((SELECT MAX(seq) FROM {t}schedules), 0) + 1, false)`,
		},
		3: {`CREATE SEQUENCE IF NOT EXISTS {t}mail_seq`},
		4: {`CREATE SEQUENCE IF NOT EXISTS {t}trajectories_seq`},
	},
	transient: func(err error) bool {
		var pe *pgconn.PgError
		// 40001 serialization_failure, 40P01 deadlock_detected.
		return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
	},
}

// PostgresOptions configure [OpenPostgres].
type PostgresOptions struct {
	// Schema is the PostgreSQL schema the store's tables live in, made if
	// it does not exist. Default: the connection's own search_path
	// (usually public).
	Schema string
	// Fresh makes a new schema with a unique name (crux_sim_ and random
	// hex) for this store alone, and Close drops it with everything in
	// it: what a test or a simulated run wants, so that runs sharing a
	// server never see each other's rows. Schema, if set, is the name's
	// start instead of crux_sim_.
	Fresh bool
	// MaxConns bounds the store's open connections. Default 8.
	MaxConns int
	// Prefix is prepended to every table name (see SQLOptions).
	Prefix string
	// OwnPasswordOnly sends the server no password but the DSN's own:
	// none from PGPASSWORD or a password file. For a DSN that a file
	// named, whose server may not be the user's.
	OwnPasswordOnly bool
}

// OpenPostgres connects to the PostgreSQL server at dsn (a postgres:// URL
// or key=value pairs, as libpq and pgx read them; a password may also come
// from PGPASSWORD or ~/.pgpass) and returns the store in o.Schema, its
// schema migrated ([NewSQL]). Close the store to release its connections.
// Errors never show the password.
func OpenPostgres(ctx context.Context, dsn string, o PostgresOptions) (*SQL, error) {
	cfg, err := postgresConfig(dsn, o)
	if err != nil {
		return nil, err
	}
	where := fmt.Sprintf("PostgreSQL at %s:%d/%s as %s", cfg.Host, cfg.Port, cfg.Database, cfg.User)
	schema := o.Schema
	if o.Fresh {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		if schema == "" {
			schema = "crux_sim_"
		}
		schema += hex.EncodeToString(b[:])
	}
	if schema != "" {
		cfg.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	}
	db := stdlib.OpenDB(*cfg)
	if o.MaxConns <= 0 {
		o.MaxConns = 8
	}
	db.SetMaxOpenConns(o.MaxConns)
	db.SetMaxIdleConns(o.MaxConns)
	fail := func(what string, err error) (*SQL, error) {
		_ = db.Close()
		return nil, fmt.Errorf("store: %s: %s: %w", where, what, err)
	}
	if err := db.PingContext(ctx); err != nil {
		return fail("connect", err)
	}
	if schema != "" {
		if err := createSchema(ctx, db, schema); err != nil {
			return fail("create schema "+schema, err)
		}
	}
	s, err := newSQL(ctx, db, SQLOptions{Dialect: PostgreSQL, Prefix: o.Prefix})
	if err != nil {
		if o.Fresh {
			_, _ = db.ExecContext(context.WithoutCancel(ctx), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		}
		return fail("open the store", err)
	}
	s.schema = schema
	s.close = func() error {
		var err error
		if o.Fresh {
			_, err = db.ExecContext(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
			if err != nil {
				err = fmt.Errorf("store: %s: drop schema %s: %w", where, schema, err)
			}
		}
		return errors.Join(err, db.Close())
	}
	return s, nil
}

// createSchema makes schema if it does not exist, under an advisory lock:
// CREATE SCHEMA IF NOT EXISTS alone fails when two sessions run it at once.
func createSchema(ctx context.Context, db *sql.DB, schema string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext('crux-sim/create-schema/' || $1))", schema); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return err
	}
	return tx.Commit()
}

// Schema is the PostgreSQL schema a store from [OpenPostgres] works in
// ("" for the connection's default, and for other stores).
func (s *SQL) Schema() string { return s.schema }

// RedactDSN returns a PostgreSQL address fit to show: its password, if it
// has one (in the URL's user part, a password query parameter or a
// password=... pair), replaced by "xxxxx".
func RedactDSN(dsn string) string {
	for _, scheme := range []string{"postgres://", "postgresql://"} {
		if !strings.HasPrefix(dsn, scheme) {
			continue
		}
		u, err := url.Parse(dsn)
		if err != nil {
			// Unparsable: keep only what follows the user part.
			if at := strings.LastIndexByte(dsn, '@'); at >= 0 {
				return scheme + "xxxxx" + dsn[at:]
			}
			return scheme + "xxxxx"
		}
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		if q := u.Query(); q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	return keywordPassword.ReplaceAllString(dsn, "${1}xxxxx")
}

// keywordPassword is the password of a key=value address, quoted or not.
var keywordPassword = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// postgresConfig reads dsn as the driver does, the PG* environment and
// password file included, except that with o.OwnPasswordOnly the password
// is the DSN's own or none.
func postgresConfig(dsn string, o PostgresOptions) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: PostgreSQL address %s: %w", RedactDSN(dsn), err)
	}
	if o.OwnPasswordOnly {
		own := ""
		if u, err := url.Parse(dsn); err == nil && u.User != nil {
			own, _ = u.User.Password()
		}
		cfg.Password = own // the one password every host of the DSN gets
	}
	return cfg, nil
}
