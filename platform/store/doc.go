// Package store is the durable side of the platform: task rows and their
// attempts, schedules and the ticker's leader lease, and the files of
// session workspaces. It is what survives a simulated crash.
//
// [Store] is three small interfaces, [Tasks], [Schedules] and [Files]. Two
// implementations:
//
//   - [Memory], the embedded default: maps and one mutex, no server.
//   - [SQL], on database/sql, for several processes sharing one database.
//     Every operation is a transaction and every state change a
//     compare-and-set on the state it read, so a claim cannot be taken
//     twice whatever the isolation level. The schema is plain (text, big
//     integers for times, JSON bodies), and placeholders and FOR UPDATE are
//     options, so SQLite, PostgreSQL and MySQL can all back it. It is tested
//     with the pure-Go modernc.org/sqlite driver (open it with
//     _txlock=immediate and a busy_timeout so that writers queue instead of
//     failing).
//
// The task lifecycle (todo → ready → running → done | blocked | failed,
// cancellable until terminal; a todo task with a failed or cancelled parent
// is never promoted) is a pure state machine with one transition table
// ([TaskEvent], [NextTask]): both implementations move every row through
// it, an illegal move is refused loudly, and the harness's platform
// invariant checks a run's task events against the same table. Their
// conformance specs are the same table run twice.
package store
