package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// SchemaVersion is the version of the SQL store's schema that this build
// reads and writes. [NewSQL] brings an older database up to it and refuses
// a newer one ([ErrSchemaVersion]).
const SchemaVersion = 4

// ErrSchemaVersion: the database's schema is newer than this build knows,
// or its version record is damaged. Nothing was changed.
var ErrSchemaVersion = errors.New("unsupported schema version")

// migration is one version of the schema: the statements that bring the
// version before it up to this one, shared by every dialect, then the
// dialect's own (Dialect.steps).
type migration struct {
	version int
	what    string
	stmts   []string
}

// migrations are every version of the schema, oldest first. Never change
// a released one: add the next.
var migrations = []migration{
	{1, "tasks, their parents and attempts, schedules, leases and files", []string{
		`CREATE TABLE IF NOT EXISTS {t}tasks (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, body TEXT NOT NULL,
			state TEXT NOT NULL, spawner TEXT NOT NULL, root TEXT NOT NULL, lease_until BIGINT NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS {t}tasks_state ON {t}tasks (state, seq)`,
		`CREATE TABLE IF NOT EXISTS {t}task_parents (child TEXT NOT NULL, parent TEXT NOT NULL, PRIMARY KEY (parent, child))`,
		`CREATE TABLE IF NOT EXISTS {t}attempts (task TEXT NOT NULL, n INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (task, n))`,
		`CREATE TABLE IF NOT EXISTS {t}schedules (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, usr TEXT NOT NULL,
			state TEXT NOT NULL, next_run BIGINT NOT NULL, expires_at BIGINT NOT NULL, body TEXT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS {t}leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, until BIGINT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS {t}files (k TEXT PRIMARY KEY, data {blob}, writer TEXT NOT NULL, version INTEGER NOT NULL, updated BIGINT NOT NULL)`,
	}},
	{2, "leases carry a fencing token; rows are numbered in creation order by an index or a sequence", []string{
		`ALTER TABLE {t}leases ADD COLUMN token BIGINT NOT NULL DEFAULT 0`,
	}},
	{3, "sessions' mailboxes, and the presence of trees with live sessions in some process", []string{
		`CREATE TABLE IF NOT EXISTS {t}mail (seq BIGINT PRIMARY KEY, addressee TEXT NOT NULL, sender TEXT NOT NULL,
			posted_at BIGINT NOT NULL, body TEXT NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS {t}mail_addressee ON {t}mail (addressee, seq)`,
		`CREATE TABLE IF NOT EXISTS {t}presence (root TEXT NOT NULL, instance TEXT NOT NULL, until BIGINT NOT NULL,
			PRIMARY KEY (root, instance))`,
	}},
	{4, "the training collector's trajectories; mail by the time it was posted, which its expiry reads", []string{
		`CREATE TABLE IF NOT EXISTS {t}trajectories (seq BIGINT PRIMARY KEY, tenant TEXT NOT NULL, root TEXT NOT NULL,
			kept_at BIGINT NOT NULL, body TEXT NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS {t}trajectories_tenant ON {t}trajectories (tenant, seq)`,
		`CREATE INDEX IF NOT EXISTS {t}mail_posted ON {t}mail (posted_at)`,
	}},
}

// migrate brings the schema up to SchemaVersion in one transaction, after
// the dialect's lock (so that processes starting together take turns), and
// records the version. A database without a version record is version 0:
// empty, or made by a build that kept none (version 1's tables, which its
// statements leave as they are).
func (s *SQL) migrate(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if s.d.lockSchema != "" {
		if _, err := tx.ExecContext(ctx, s.sql(s.d.lockSchema)); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, s.sql("CREATE TABLE IF NOT EXISTS {t}schema_version (version INTEGER NOT NULL)")); err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, s.sql("SELECT version FROM {t}schema_version"))
	versions, err := scanRows(rows, err, func(r *sql.Rows) (int, error) {
		var v int
		return v, r.Scan(&v)
	})
	if err != nil {
		return err
	}
	current := 0
	switch {
	case len(versions) > 1:
		return fmt.Errorf("the %sschema_version table has %d rows, not one: %w", s.opts.Prefix, len(versions), ErrSchemaVersion)
	case len(versions) == 1:
		current = versions[0]
	}
	if current > SchemaVersion {
		return fmt.Errorf("the database's schema is version %d, newer than version %d that this build of crux-sim knows; "+
			"use the crux-sim that wrote it (or a newer one), or another database: %w", current, SchemaVersion, ErrSchemaVersion)
	}
	if current < 0 {
		return fmt.Errorf("the database's schema version is %d: %w", current, ErrSchemaVersion)
	}
	for _, m := range migrations {
		if m.version <= current {
			continue
		}
		for _, stmt := range append(append([]string(nil), m.stmts...), s.d.steps[m.version]...) {
			if _, err := tx.ExecContext(ctx, s.sql(stmt)); err != nil {
				return fmt.Errorf("version %d (%s): %w", m.version, m.what, err)
			}
		}
	}
	if current == SchemaVersion {
		return tx.Commit()
	}
	if len(versions) == 0 {
		_, err = tx.ExecContext(ctx, s.sql("INSERT INTO {t}schema_version (version) VALUES (?)"), SchemaVersion)
	} else {
		_, err = tx.ExecContext(ctx, s.sql("UPDATE {t}schema_version SET version = ?"), SchemaVersion)
	}
	if err != nil {
		return err
	}
	return tx.Commit()
}
