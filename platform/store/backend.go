package store

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Backend is a kind of store that a simulated run opens fresh and removes
// again when it ends, so that runs never see each other's rows: the memory
// store, or a PostgreSQL server on which every run gets a schema of its
// own. The zero Backend names no store: whoever holds it uses its
// default (the memory store).
type Backend struct {
	kind string // "", "memory" or "postgres"
	dsn  string
}

// ParseBackend reads a backend as a user names it: "" (none: the
// default); "memory"; "postgres",
// which connects as libpq would from the environment (PGHOST, PGPORT,
// PGUSER, PGPASSWORD, PGDATABASE, ~/.pgpass); or a postgres:// (or
// postgresql://) URL.
func ParseBackend(spec string) (Backend, error) {
	switch s := strings.TrimSpace(spec); {
	case s == "":
		return Backend{}, nil
	case s == "memory":
		return Backend{kind: "memory"}, nil
	case s == "postgres" || s == "postgresql":
		return Backend{kind: "postgres"}, nil
	case strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://"):
		if _, err := pgx.ParseConfig(s); err != nil {
			return Backend{}, fmt.Errorf("store %s: %w", RedactDSN(s), err)
		}
		return Backend{kind: "postgres", dsn: s}, nil
	default:
		return Backend{}, fmt.Errorf("store %q: want memory, postgres (a server from the PG* environment variables) or a postgres:// URL", RedactDSN(s))
	}
}

// IsZero reports whether b names no store.
func (b Backend) IsZero() bool { return b == Backend{} }

// Postgres reports whether b is a PostgreSQL server.
func (b Backend) Postgres() bool { return b.kind == "postgres" }

// HasPassword reports whether b's address carries a password, which does
// not belong in a file that is shared or checked in.
func (b Backend) HasPassword() bool {
	u, err := url.Parse(b.dsn)
	if err != nil {
		return false
	}
	_, has := u.User.Password()
	return has || u.Query().Has("password")
}

// String names b as ParseBackend reads it, with any password hidden.
func (b Backend) String() string {
	switch {
	case !b.Postgres():
		return "memory"
	case b.dsn == "":
		return "postgres"
	}
	return RedactDSN(b.dsn)
}

// Open makes a fresh, empty store of this kind (the memory store when b
// names none) and returns it with the function that removes it (for
// PostgreSQL: drops its schema and closes its connections).
func (b Backend) Open(ctx context.Context) (Store, func() error, error) {
	if !b.Postgres() {
		return NewMemory(), func() error { return nil }, nil
	}
	s, err := OpenPostgres(ctx, b.dsn, PostgresOptions{Fresh: true, MaxConns: 2})
	if err != nil {
		return nil, nil, err
	}
	return s, s.Close, nil
}
