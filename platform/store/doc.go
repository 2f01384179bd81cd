// Package store is the durable side of the platform: task rows and their
// attempts, schedules and the ticker's leader lease, and the files of
// session workspaces. It is what survives a simulated crash, and what
// several processes share.
//
// [Store] is five small interfaces, [Tasks], [Schedules], [Files],
// [Mailboxes] and [Training]. Two implementations:
//
//   - [Memory], the embedded default: maps and one mutex, no server.
//   - [SQL], on database/sql, for several processes sharing one database:
//     the same operations, written once, on each [Dialect] ([SQLite] through
//     the pure-Go modernc.org/sqlite driver, opened with _txlock=immediate
//     and a busy_timeout; [PostgreSQL] through pgx, opened with
//     [OpenPostgres]). Every operation is a transaction and every state
//     change a compare-and-set on the state it read, so a claim cannot be
//     taken twice whatever the isolation level; on PostgreSQL a claim also
//     takes its row with FOR UPDATE SKIP LOCKED, so racing claims neither
//     wait for nor double-take a row. The store migrates its own schema and
//     records its version ([SchemaVersion]); a newer database is refused.
//
// The task lifecycle (todo → ready → running → done | blocked | failed,
// cancellable until terminal; a todo task with a failed or cancelled parent
// is never promoted) is a pure state machine with one transition table
// ([TaskEvent], [NextTask]): every implementation moves every row through
// it, an illegal move is refused loudly, and the harness's platform
// invariant checks a run's task events against the same table. A claim
// holds a lease until a time the caller gives; [Tasks.Reap] ends the
// attempts whose lease lapsed as crashed.
//
// The scheduled-work ticker's leadership is a [Lease] row with a fencing
// token ([Schedules.TryLead]): one holder at a time until its lease lapses,
// and a fire names the lease it happens under ([Schedules.Fire]), so a
// leader whose lease has passed on fires nothing, and a schedule fires at
// most once for one due time.
//
// A session's events reach it through the store when it is live in another
// process, or in none (its process crashed): [Mailboxes.PostMail] appends
// to its mailbox, and the process where it is live takes the mail
// ([Mailboxes.TakeMail]), each mail exactly once and in the order posted,
// in one transaction; mail no process took in time is removed by
// [Mailboxes.ExpireMail]. [Mailboxes.SetPresence] records, with a lease, which
// trees have live sessions in some process, so that a process's workspace
// sweeper leaves another process's live trees alone.
//
// The training collector's trajectories are kept as their work ends
// ([Training.KeepTrajectory]), each with its tree's tenant, so that an
// export after a crash holds what the sessions' lost event logs did.
//
// One conformance suite runs on all three stores (Memory, SQLite and
// PostgreSQL, the last when CRUX_SIM_POSTGRES_DSN names a server), and a
// multi-process test runs real platform processes on one PostgreSQL schema
// while it kills them.
//
// [Backend] names a store that a simulated run opens fresh and removes at
// its end (crux-sim run --store, a platform scenario's store key).
package store
