package store

import (
	"path/filepath"
	"testing"
)

// A store URL that a file names may pick the server, but the user's
// credentials (PGPASSWORD, a password file) go only to a server on this
// machine: a scenario naming another host gets no password but its URL's
// own. A URL the user gives (crux-sim run --store, ParseBackend) is theirs,
// and the environment's password goes with it.
func TestAFileNamedServerGetsTheUsersPasswordOnlyOnThisMachine(t *testing.T) {
	t.Setenv("PGPASSWORD", "hunter2-from-the-environment")
	t.Setenv("PGPASSFILE", filepath.Join(t.TempDir(), "none"))
	for _, c := range []struct {
		name, url string
		file      bool
		want      string
	}{
		{"a file's URL of another host", "postgres://db.example.com/x", true, ""},
		{"a file's URL of another host, with its own password", "postgres://u:its-own@db.example.com/x", true, "its-own"},
		{"a file's URL of another host among loopback ones", "postgres://localhost,db.example.com/x", true, ""},
		{"a file's URL of localhost", "postgres://localhost:5432/x", true, "hunter2-from-the-environment"},
		{"a file's URL of 127.0.0.1", "postgres://127.0.0.1/x", true, "hunter2-from-the-environment"},
		{"a file's URL of [::1]", "postgres://[::1]:5432/x", true, "hunter2-from-the-environment"},
		{"the user's own URL of another host", "postgres://db.example.com/x", false, "hunter2-from-the-environment"},
	} {
		t.Run(c.name, func(t *testing.T) {
			parse := ParseBackend
			if c.file {
				parse = ParseFileBackend
			}
			b, err := parse(c.url)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := postgresConfig(b.dsn, b.postgresOptions())
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Password != c.want {
				t.Errorf("the server gets the password %q, want %q", cfg.Password, c.want)
			}
		})
	}
}
