package store

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Backend is a kind of store that a simulated run opens fresh and removes
// again when it ends, so that runs never see each other's rows: the memory
// store, or a PostgreSQL server on which every run gets a schema of its
// own. The zero Backend names no store: whoever holds it uses its
// default (the memory store).
type Backend struct {
	kind backendKind
	// ownPassword says that the server, named by a file, gets no password
	// but the URL's own: none from PGPASSWORD or a password file
	// (PostgresOptions.OwnPasswordOnly).
	ownPassword bool
	dsn         string
}

// backendKind is the kind of a Backend, in a byte: a Backend is part of
// every simulated run's options, whose size is counted.
type backendKind uint8

const (
	noBackend backendKind = iota
	memoryBackend
	postgresBackend
)

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
		return Backend{kind: memoryBackend}, nil
	case s == "postgres" || s == "postgresql":
		return Backend{kind: postgresBackend}, nil
	case strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://"):
		if _, err := pgx.ParseConfig(s); err != nil {
			return Backend{}, fmt.Errorf("store %s: %w", RedactDSN(s), err)
		}
		return Backend{kind: postgresBackend, dsn: s}, nil
	default:
		return Backend{}, fmt.Errorf("store %q: want memory, postgres (a server from the PG* environment variables) or a postgres:// URL", RedactDSN(s))
	}
}

// fileURLKeys are the parameters a store URL that a file names may set:
// where the server is and how to reach it. The driver's others name files
// it reads when it parses the URL (sslrootcert, sslcert, sslkey, passfile,
// servicefile, service), which a file must never make the tool open; they
// belong in the PG* environment or on the command line.
var fileURLKeys = []string{"host", "port", "dbname", "user", "password", "sslmode", "ssl", "sslsni",
	"connect_timeout", "application_name", "target_session_attrs", "channel_binding", "require_auth"}

// notAllowedKey finds the key in the driver's refusal of a key outside
// fileURLKeys.
var notAllowedKey = regexp.MustCompile(`connection string key "([^"]*)" is not in ConnStringAllowedKeys`)

// ParseFileBackend is ParseBackend for a store that a file names (a
// scenario's platform.store): a postgres:// URL may set only where the
// server is and how to reach it, never a parameter that names a file for
// the driver to read, nor a Unix socket path as its host. The driver
// refuses the other parameters before it touches the file system.
func ParseFileBackend(spec string) (Backend, error) {
	s := strings.TrimSpace(spec)
	if !strings.HasPrefix(s, "postgres://") && !strings.HasPrefix(s, "postgresql://") {
		return ParseBackend(s)
	}
	parse := func(keys []string) (*pgx.ConnConfig, error) {
		return pgx.ParseConfigWithOptions(s, pgx.ParseConfigOptions{ParseConfigOptions: pgconn.ParseConfigOptions{ConnStringAllowedKeys: keys}})
	}
	cfg, err := parse(fileURLKeys)
	if err != nil {
		// The driver names one refused key, whichever its map gives first;
		// the message names every key of the query that is not allowed, so
		// that a file always gets the same one. (Never parse again with a
		// refused key allowed: that would read the file it names.)
		if m := notAllowedKey.FindStringSubmatch(err.Error()); m != nil {
			refused := []string{m[1]}
			if _, q, ok := strings.Cut(s, "?"); ok {
				for _, kv := range strings.Split(q, "&") {
					k, _, _ := strings.Cut(kv, "=")
					if k != "" && k != "database" && !slices.Contains(fileURLKeys, k) && !slices.Contains(refused, k) {
						refused = append(refused, k)
					}
				}
			}
			slices.Sort(refused)
			for i, k := range refused {
				refused[i] = strconv.Quote(k)
			}
			return Backend{}, fmt.Errorf("store: the URL sets %s, which a file's store URL may not: it sets only %s, never a file for the driver to read (give the rest in the PG* environment, or with crux-sim run --store)", strings.Join(refused, ", "), strings.Join(fileURLKeys, ", "))
		}
		return Backend{}, fmt.Errorf("store %s: %w", RedactDSN(s), err)
	}
	hosts := []string{cfg.Host}
	for _, fb := range cfg.Fallbacks {
		hosts = append(hosts, fb.Host)
	}
	for _, h := range hosts {
		if !strings.HasPrefix(h, "/") {
			continue
		}
		// A socket directory the driver found by default, or the
		// environment named, is not the file's doing; one the URL names is.
		if _, err := parse(slices.DeleteFunc(slices.Clone(fileURLKeys), func(k string) bool { return k == "host" })); err != nil {
			return Backend{}, fmt.Errorf("store: the URL's host %q is a path, a Unix socket; a file's store URL names a server by host name or address (give a socket in PGHOST, or with crux-sim run --store)", h)
		}
	}
	// The user's credentials (PGPASSWORD, ~/.pgpass) go only to a server
	// on this machine: a file that names another host would otherwise
	// have the driver send them there.
	own := false
	for _, h := range hosts {
		own = own || !loopback(h)
	}
	return Backend{kind: postgresBackend, dsn: s, ownPassword: own}, nil
}

// loopback reports whether host is this machine by its name or address
// (not by what a name resolves to, which the network decides).
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// IsZero reports whether b names no store.
func (b Backend) IsZero() bool { return b == Backend{} }

// Postgres reports whether b is a PostgreSQL server.
func (b Backend) Postgres() bool { return b.kind == postgresBackend }

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

// postgresOptions are the options Open connects to b's server with.
func (b Backend) postgresOptions() PostgresOptions {
	return PostgresOptions{Fresh: true, MaxConns: 2, OwnPasswordOnly: b.ownPassword}
}

// Open makes a fresh, empty store of this kind (the memory store when b
// names none) and returns it with the function that removes it (for
// PostgreSQL: drops its schema and closes its connections).
func (b Backend) Open(ctx context.Context) (Store, func() error, error) {
	if !b.Postgres() {
		return NewMemory(), func() error { return nil }, nil
	}
	s, err := OpenPostgres(ctx, b.dsn, b.postgresOptions())
	if err != nil {
		return nil, nil, err
	}
	return s, s.Close, nil
}
