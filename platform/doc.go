// Package platform is crux-sim's model of a platform's background jobs:
// sessions with event logs and a live tree, workers, delegation,
// durable tasks, schedules and loops, and the sweepers that keep them tidy.
// It runs on core: every session turn is a core.Runtime.RunWith with the
// session's history, through the same provider, clock, id source and
// executor seams, so an agent under test behaves here as it does anywhere.
//
// # Sessions
//
// A [Platform] holds sessions. [Platform.NewSession] starts a root session
// for a user on a channel (web, api, slack, ...); [Platform.Send] queues a
// user message and wakes it. A session runs one turn per batch of queued
// messages: its agent (from [Options.Agents]) with its own iteration budget,
// its own history and its own event log ([Platform.Events]). Children are
// sessions too, so [Platform.Tree] answers a session's descendant graph.
//
// The agent a session runs is its template with the platform's tools added
// by a toolset policy that lives in one function: workers and task attempts
// lose the coordinator family (spawn_worker, send_worker_message,
// stop_worker); delegated children inherit excluded tools and always lose
// ask_user_question, the coordinator family and the cron tools (they keep
// spawn_task); only an orchestrator child above the depth cap keeps
// delegate_task; task attempts get worker_complete, worker_block and
// worker_context; loop runs get loop_complete (fixed) or loop_wait
// (dynamic). Whatever a session creates, by any route, runs with no more
// authority than it had: a child starts from its creator's, and a task or
// schedule row carries it ([store.Authority]) to every attempt and run it
// makes, after a crash too. An agent's own tool may share a platform
// tool's name as long as the session is not offered both
// ("platform:NAME" in excluded or allowed tools names the platform's only).
//
// # The three primitives
//
//   - spawn_worker starts a worker session and returns its id at once. When
//     a worker's run finishes, worker.complete lands in the parent's log and
//     the parent is re-enqueued with a JSON notice, so it wakes.
//     send_worker_message wakes a worker even after it completed;
//     stop_worker interrupts it. One attempt: a failed worker stays failed.
//   - delegate_task blocks its caller while one child per goal runs in
//     parallel, up to a 60-minute ceiling; it emits delegation.start,
//     delegation.complete or delegation.failed, and a one-shot
//     delegation.stale for a child idle past the threshold. Depth is capped
//     at 2. Artifacts of delegated children propagate to the parent.
//   - spawn_task writes a durable row to the [store.Store]. A dispatcher
//     claims ready rows (a task waits in todo until every parent is done;
//     failed or cancelled parents never promote it), runs each attempt as a
//     task session, retries crashed, timed-out and errored attempts up to
//     max_attempts consecutive ones, and opens every retry with a
//     "## Prior attempts on this task" section ([AttemptPrompt]).
//     worker_block pauses a task; only its spawner may unblock_task or
//     cancel_task it.
//
// Every session of a tree reads and writes its root's workspace
// ([WorkspacePrefix]); a session overwriting another's file is a [Finding].
//
// # Time
//
// Schedules ([Platform.Cron], [Platform.Once], cron_create, [Platform.Loop]
// for "/loop") are rows in the store, on a 5-field cron cadence ([ParseCron]:
// @every only with [Options.AllowCronEvery], no TZ= prefix) or one-shot. One persistent
// timer, the scheduled-work ticker, wakes at the earliest due row this
// process knows of and at least every [Options.SchedulePollInterval], so
// that other processes' rows and a dead leader are noticed within a poll;
// the process that takes or holds the leader lease (the store's TryLead)
// fires each due row on a fresh channel="scheduled" session, in its tree's
// workspace, and delivers the run's text back: a channel.post for slack,
// telegram and teams origins, a loop.result event otherwise (never into the
// origin's context, never waking it). A scheduled slash command ("/loop
// ...") runs as the command. A recovery pass completes loops that expired
// without firing again. The sweepers
// (board, inbox, workspace) run on their cadences; an idle tick costs one
// timer re-arm, and on the simulator's clock (which the platform tells of
// its idle ticks and polls) not even a stop of the clock. [Platform.CollectTraining] exports successful delegation
// and skill trajectories as JSONL, from the store (store.Training), which
// keeps each when its work ends: an export after a crash holds what the
// crashed process did.
//
// # Crashes
//
// [Platform.Crash] simulates a process crash: sessions, logs, the board,
// the inbox and running turns are dropped and no durable write happens
// after it. Crash and Close wait for the dropped actors through the
// executor, from an actor or from a simulator's driver alike. A new
// Platform on the same store reaps the crashed attempts once their lease
// (the task timeout) lapses by [Options.ReapGrace], and retries them.
// A session lives in one process; [Platform.RestoreSession] reopens a root
// under its old id so that ownership checks and the events addressed to it
// find it. [Platform.Restart] is the whole of it: crash, a new process on the store,
// the roots reopened. [Platform.LostTasks] is the liveness rule that goes
// with it: the tasks nothing will ever move again, seen from the live
// process.
//
// # Processes sharing a store
//
// Several Platforms may share one store (the memory store in one program,
// SQLite, or PostgreSQL across machines), each with its own
// [Options.Instance] and an [Options.TaskPollInterval]. Any of them claims
// ready tasks, and what happens to a session reaches it wherever it lives:
// an event for a session that is not live in the emitting process (a task
// attempt's outcome for its spawner, a loop.result for its origin) is
// posted to the session's mailbox in the store ([store.Mailboxes]) with
// the notice that wakes it, and the process where the session is live
// takes its mail at its task poll and delivers it as a local event would
// be, in the order it was posted, exactly once ([Event.From] names the
// sender). Mail for a session live nowhere waits for RestoreSession, so it
// survives the crash of its sender, for [Options.MailTTL] (24 h by
// default): mail no process took by then is removed by workspace cleanup
// ([Platform.SweepMail]), and a session that will never run again takes
// no more (inbox expiry closes its mailbox), so mail neither piles up in
// the store nor in the sender's memory. The same poll records which trees
// have live sessions in this process, for three polls, and the workspace
// sweeper of every process keeps those trees' files. A cancel reaches an
// attempt running in another process at that process's poll too.
//
// # Determinism
//
// Every goroutine starts through core.Executor.Go; every wait is an
// Executor.Wait on channels that are only closed; a session turn
// ([PointSessionTurn]) and a task claim ([PointTaskClaim]) yield to the
// executor first. Timer-started actors are named after their job in
// Executor.Go (a sweeper cadence, the scheduled-work ticker, a stale check,
// a task timeout), so a simulator sees and orders them like any actor. All time
// comes from the clock, and timers are clock.AfterFunc callbacks that never
// block: they close a channel, re-arm, or start an actor. Maps are walked in
// sorted order wherever order shows. No lock is held across a wait, a
// yield, a provider call or an observer callback. So under a simulator's
// executor and virtual clock the same scenario gives the same events, and a
// week passes in milliseconds.
//
// # Events
//
// Each event ([Event]) is on one session's log (or the platform log) and is
// handed to [Options.Observer] in sequence order. The dotted types are the
// seed's (worker.complete, delegation.stale, task.blocked, loop.result);
// the others make a run fully traceable. [TraceObserver] records them into a
// core/trace Recorder beside the runtime's own events.
package platform
