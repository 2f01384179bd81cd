package platform

import (
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/platform/store"
)

// Options configure a Platform. The zero value of every field but Core's
// Provider and Agents has a default.
type Options struct {
	// Core configures the runtime that runs every session's turns: the
	// provider, and the clock, id source and executor, which the platform
	// shares so that everything goes through the same determinism seams.
	Core core.Options
	// Agents are the agents sessions run, by name. spawn_worker,
	// delegate_task and spawn_task may name one; by default a child runs
	// its parent's agent.
	Agents map[string]*core.Agent
	// Store keeps tasks, schedules and workspace files; it survives a
	// crash. Default: a new store.Memory.
	Store store.Store
	// Observer receives every event.
	Observer Observer
	// Instance names this process in task claims; default a fresh id.
	Instance string

	// MaxIterations is a session's provider-step budget per turn when its
	// SessionOptions do not set one. Default 24.
	MaxIterations int

	// MaxDelegationDepth caps delegation: a child at this depth cannot
	// delegate. Default 2.
	MaxDelegationDepth int
	// DelegationCeiling is the longest delegate_task waits. Default 60m.
	DelegationCeiling time.Duration
	// StaleThreshold is how long a delegated child may go without a
	// provider step before a delegation.stale. Default 10m.
	StaleThreshold time.Duration

	// TaskMaxAttempts is max_attempts when spawn_task omits it. Default 3.
	TaskMaxAttempts int
	// TaskTimeout bounds one attempt; it is also the claim's lease, after
	// which another process reaps a crashed attempt. Default 30m.
	TaskTimeout time.Duration
	// MaxRunningTasks bounds the attempts this process runs at once.
	// Default 4.
	MaxRunningTasks int
	// ReapGrace is how long past a lapsed lease the reaper waits before it
	// marks the attempt crashed, so that a live process's own timeout
	// always reports its attempt first. Default 1m.
	ReapGrace time.Duration
	// LostTaskGrace is how long past the moment a task should have moved
	// (its lapsed lease reaped, a ready task claimed while there is room)
	// LostTasks waits before it calls the task lost. Default 1m.
	LostTaskGrace time.Duration
	// TaskPollInterval, when set, makes the dispatcher poll the store for
	// ready tasks (needed when other processes share it). Default off: the
	// dispatcher is woken by this process's own changes and by lease
	// expiry.
	TaskPollInterval time.Duration

	// SchedulePollInterval is the cadence at which the scheduled-work
	// ticker polls the store for due rows, so that rows another process
	// wrote, and a leader that died, are noticed within one poll: a
	// surviving replica takes the lease at its first poll after the dead
	// leader's lease lapsed. Rows this process writes are fired when they
	// are due, without waiting for a poll. An idle poll costs one store
	// read and no actor. Default 1m.
	SchedulePollInterval time.Duration
	// ScheduleRecoveryInterval is the cadence of the ticker's recovery pass
	// that sweeps expired loops to completed. Default 1h.
	ScheduleRecoveryInterval time.Duration
	// LeaderTTL is the scheduled-work ticker's leader lease, taken and
	// renewed through the store's TryLead on every pass that has work.
	// Default 2m.
	LeaderTTL time.Duration
	// AllowCronEvery lets schedules use robfig/cron's "@every <duration>"
	// descriptor. Off by default: a cadence is a 5-field cron expression
	// (or one of the descriptors that name one, such as @hourly).
	AllowCronEvery bool

	// BoardSweepInterval (default 5m): expire lapsed board claims, purge
	// notes older than NoteTTL (default 24h) or of trees no longer live.
	BoardSweepInterval time.Duration
	NoteTTL            time.Duration
	// ClaimTTL is a board claim's default lifetime. Default 15m.
	ClaimTTL time.Duration
	// InboxSweepInterval (default 5m): mark pending inbox items of
	// terminal sessions non-actionable.
	InboxSweepInterval time.Duration
	// WorkspaceSweepInterval (default 6h): delete workspace prefixes of
	// roots that are no longer live, have no unfinished task and no active
	// schedule, and were last written more than WorkspaceGrace (default
	// 24h) ago.
	WorkspaceSweepInterval time.Duration
	WorkspaceGrace         time.Duration
	// MailTTL is how long mail waits in the store for its addressee (a
	// session live in no process, or one that will never run again and
	// no longer takes it) before workspace cleanup, on its cadence,
	// drops it; what this process keeps of what it sent goes with it.
	// Default 24h.
	MailTTL time.Duration
	// NoSweepers leaves the periodic jobs off (they can still be run by
	// hand).
	NoSweepers bool

	// Skills names tools whose successful calls the training collector
	// exports as skill-invocation trajectories.
	Skills []string
}

// Defaults.
const (
	DefaultMaxIterations       = 24
	DefaultMaxDelegationDepth  = 2
	DefaultDelegationCeiling   = 60 * time.Minute
	DefaultStaleThreshold      = 10 * time.Minute
	DefaultTaskMaxAttempts     = 3
	DefaultTaskTimeout         = 30 * time.Minute
	DefaultMaxRunningTasks     = 4
	DefaultReapGrace           = time.Minute
	DefaultLostTaskGrace       = time.Minute
	DefaultRecoveryInterval    = time.Hour
	DefaultSchedulePoll        = time.Minute
	DefaultLeaderTTL           = 2 * time.Minute
	DefaultBoardSweepInterval  = 5 * time.Minute
	DefaultNoteTTL             = 24 * time.Hour
	DefaultClaimTTL            = 15 * time.Minute
	DefaultInboxSweepInterval  = 5 * time.Minute
	DefaultWorkspaceSweepEvery = 6 * time.Hour
	DefaultWorkspaceGrace      = 24 * time.Hour
	DefaultMailTTL             = 24 * time.Hour

	// FixedLoopLifetime: a fixed-interval loop expires after 3 days.
	FixedLoopLifetime = 72 * time.Hour
	// DynamicLoopLifetime: a dynamic loop expires after 7 days.
	DynamicLoopLifetime = 7 * 24 * time.Hour
	// MinLoopWait and MaxLoopWait clamp loop_wait.
	MinLoopWait = time.Minute
	MaxLoopWait = time.Hour
	// PriorAttemptsShown is how many prior attempts a retry's prompt lists.
	PriorAttemptsShown = 5
)

func (o *Options) defaults() {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	seti := func(d *int, v int) {
		if *d <= 0 {
			*d = v
		}
	}
	seti(&o.MaxIterations, DefaultMaxIterations)
	seti(&o.MaxDelegationDepth, DefaultMaxDelegationDepth)
	set(&o.DelegationCeiling, DefaultDelegationCeiling)
	set(&o.StaleThreshold, DefaultStaleThreshold)
	seti(&o.TaskMaxAttempts, DefaultTaskMaxAttempts)
	set(&o.TaskTimeout, DefaultTaskTimeout)
	seti(&o.MaxRunningTasks, DefaultMaxRunningTasks)
	set(&o.ReapGrace, DefaultReapGrace)
	set(&o.LostTaskGrace, DefaultLostTaskGrace)
	set(&o.ScheduleRecoveryInterval, DefaultRecoveryInterval)
	set(&o.SchedulePollInterval, DefaultSchedulePoll)
	set(&o.LeaderTTL, DefaultLeaderTTL)
	set(&o.BoardSweepInterval, DefaultBoardSweepInterval)
	set(&o.NoteTTL, DefaultNoteTTL)
	set(&o.ClaimTTL, DefaultClaimTTL)
	set(&o.InboxSweepInterval, DefaultInboxSweepInterval)
	set(&o.WorkspaceSweepInterval, DefaultWorkspaceSweepEvery)
	set(&o.WorkspaceGrace, DefaultWorkspaceGrace)
	set(&o.MailTTL, DefaultMailTTL)
	if o.Store == nil {
		o.Store = store.NewMemory()
	}
}

// SessionOptions configure a root session.
type SessionOptions struct {
	// Agent names the agent in Options.Agents. Required.
	Agent string
	// User owns the session and the schedules it creates.
	User string
	// Channel is where the session came from: web (default), api, slack,
	// telegram, teams. Loop results go back to it.
	Channel string
	// ExcludedTools are removed from this session and inherited by every
	// delegated child.
	ExcludedTools []string
	// AllowedTools, when set, is an allowlist of the authored and platform
	// tools the session gets.
	AllowedTools []string
	// MaxIterations overrides Options.MaxIterations.
	MaxIterations int
	// Tenant is the tenant the session's tree belongs to: the training
	// collector exports its trajectories to that tenant's bucket only. A
	// tree with none is the platform's one tenant's: every collection
	// exports it (a platform that serves one tenant sets none).
	Tenant string
}
