package store

import (
	"strconv"
	"strings"
)

// Dialect is what the SQL store needs to know about its database, and all
// it needs: the one implementation of every operation ([SQL]) runs on each
// dialect, so a rule of the store is written once whatever backs it. There
// are two, [SQLite] and [PostgreSQL].
type Dialect struct {
	name string
	// placeholder renders the n-th (from 1) bind parameter.
	placeholder func(n int) string
	// forUpdate locks the rows a transaction reads before it writes them
	// (" FOR UPDATE"); empty where write transactions serialise anyway
	// (SQLite, opened with _txlock=immediate).
	forUpdate string
	// forShare locks a row against writers while a transaction relies on
	// it (the leader lease a schedule fires under).
	forShare string
	// skipLocked is Claim's lock on its candidate: " FOR UPDATE SKIP
	// LOCKED" takes the oldest ready row no other claim holds, so racing
	// claims never wait on each other and never both take one row.
	skipLocked string
	// blob is the column type of file contents.
	blob string
	// bytewise makes an ORDER BY on text compare bytes, as Go's string
	// order does, whatever the database's collation.
	bytewise string
	// nextSeq is the expression that numbers a new row of table in
	// creation order.
	nextSeq func(table string) string
	// lockSchema, when set, runs first in the migration transaction, so
	// that processes starting together migrate one after another.
	lockSchema string
	// steps are the dialect's own statements of a schema version, run
	// after the shared ones.
	steps map[int][]string
	// transient reports whether err means "run the transaction again"
	// (a deadlock or serialization failure the database broke for us).
	transient func(error) bool
}

// Name is the dialect's name: "sqlite" or "postgres".
func (d *Dialect) Name() string { return d.name }

// SQLite is the dialect of SQLite (tested with the pure-Go
// modernc.org/sqlite driver). Open the database with _txlock=immediate and
// a busy_timeout, so that write transactions queue instead of failing; a
// write transaction then has the database to itself, which is why no read
// needs a row lock.
var SQLite = &Dialect{
	name:        "sqlite",
	placeholder: func(int) string { return "?" },
	blob:        "BLOB",
	nextSeq: func(table string) string {
		return "(SELECT COALESCE(MAX(seq), 0) + 1 FROM {t}" + table + ")"
	},
	steps: map[int][]string{
		2: {
			`CREATE INDEX IF NOT EXISTS {t}tasks_seq ON {t}tasks (seq)`,
			`CREATE INDEX IF NOT EXISTS {t}schedules_seq ON {t}schedules (seq)`,
		},
	},
	transient: func(error) bool { return false },
}

// render expands a statement template: {t} is the table prefix, {fu},
// {fs} and {skip} the dialect's row locks, {blob} its bytes type, {C} its
// bytewise collation, {seq:table} its next creation number of table, and
// each ? a bind parameter in the dialect's form.
func (d *Dialect) render(stmt, prefix string) string {
	for {
		i := strings.Index(stmt, "{seq:")
		if i < 0 {
			break
		}
		j := strings.IndexByte(stmt[i:], '}')
		stmt = stmt[:i] + d.nextSeq(stmt[i+len("{seq:"):i+j]) + stmt[i+j+1:]
	}
	stmt = strings.NewReplacer("{fu}", d.forUpdate, "{fs}", d.forShare, "{skip}", d.skipLocked,
		"{blob}", d.blob, "{C}", d.bytewise).Replace(stmt)
	stmt = strings.ReplaceAll(stmt, "{t}", prefix)
	var b strings.Builder
	n := 0
	for _, c := range stmt {
		if c == '?' {
			n++
			b.WriteString(d.placeholder(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// dollar is PostgreSQL's placeholder, $1, $2, ...
func dollar(n int) string { return "$" + strconv.Itoa(n) }
