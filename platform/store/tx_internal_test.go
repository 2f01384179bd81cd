package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	_ "modernc.org/sqlite"
)

// A transaction the database broke off (a deadlock, a serialization
// failure) runs again, up to txTries times; any other error ends it at once.
func TestATransactionTheDatabaseBrokeOffIsRunAgain(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "tx.db")+"?_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	brokenOff, other := errors.New("broken off"), errors.New("other")
	d := *SQLite
	d.transient = func(err error) bool { return errors.Is(err, brokenOff) }
	s, err := NewSQL(ctx, db, SQLOptions{Dialect: &d})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		fails int   // how many runs fail first
		with  error // and with what
		runs  int
		want  error
	}{
		{"broken off twice, then through", 2, brokenOff, 3, nil},
		{"broken off every time", 1000, brokenOff, txTries, brokenOff},
		{"another error", 1000, other, 1, other},
	} {
		runs := 0
		err := s.tx(ctx, "op", "x-1", func(*sql.Tx) error {
			runs++
			if runs <= tc.fails {
				return tc.with
			}
			return nil
		})
		if runs != tc.runs || !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s: %d runs, error %v; want %d runs, error %v", tc.name, runs, err, tc.runs, tc.want)
		}
		if err != nil && err.Error() != "store: op x-1: "+tc.want.Error() {
			t.Errorf("%s: the error %q does not name the operation and the id", tc.name, err)
		}
	}
}

// PostgreSQL's deadlock and serialization failures are the errors that run
// a transaction again; nothing else is.
func TestPostgreSQLRunsAgainAfterADeadlockOrASerializationFailureOnly(t *testing.T) {
	for code, want := range map[string]bool{"40P01": true, "40001": true, "23505": false, "57014": false} {
		err := fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: code})
		if got := PostgreSQL.transient(err); got != want {
			t.Errorf("SQLSTATE %s: transient = %v, want %v", code, got, want)
		}
	}
	if PostgreSQL.transient(errors.New("40P01")) {
		t.Error("a plain error is not PostgreSQL's")
	}
}
