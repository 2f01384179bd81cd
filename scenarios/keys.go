package scenarios

import "slices"

// The keys a scenario file may use, section by section. The loader reads
// every mapping through these lists, so they are the whole vocabulary of the
// file format: docs/scenarios.md documents each key, and a test holds the
// two in step.
var (
	scenarioKeys = []string{"name", "description", "tags", "agents", "run", "platform", "options", "script", "faults", "expect"}
	agentKeys    = []string{"description", "prompt", "tools", "max-steps"}
	promptKeys   = []string{"id", "input", "output", "system", "template"}
	// toolKinds are the single keys of a tool entry (the toolKind values).
	toolKinds = toolKindKeys()
	// funcToolKeys are the fields of a tool or background-tool.
	funcToolKeys = []string{"description", "input", "result", "echo", "error", "latency"}
	runKeys      = []string{"id", "model", "agents", "context"}
	optionKeys   = []string{"max-concurrent", "max-outstanding", "max-steps", "settle", "resolution"}
	// platformKeys are the platform section's: what starts, for how long,
	// and the platform's limits and cadences.
	platformKeys = []string{"sessions", "tasks", "crons", "actions", "replicas", "horizon", "sweepers", "max-iterations", "max-delegation-depth",
		"delegation-ceiling", "stale-threshold", "task-max-attempts", "task-timeout", "max-running-tasks", "skills",
		"reap-grace", "lost-task-grace", "task-poll-interval", "schedule-poll-interval", "schedule-recovery-interval",
		"leader-ttl", "allow-cron-every", "board-sweep-interval", "note-ttl", "claim-ttl", "inbox-sweep-interval",
		"workspace-sweep-interval", "workspace-grace", "mail-ttl", "store"}
	sessionKeys = []string{"name", "agent", "user", "tenant", "channel", "excluded-tools", "allowed-tools", "max-iterations", "send"}
	taskKeys    = []string{"name", "session", "prompt", "title", "agent", "parents", "max-attempts"}
	cronKeys    = []string{"session", "cron", "at", "prompt"}
	// actionKinds are the single keys of a platform action; actionKeys
	// its when; actionTargetKeys the fields of its kind.
	actionKinds      = []string{"send", "answer", "collect-training", "kill-leader"}
	actionKeys       = []string{"at", "after", "delay"}
	actionTargetKeys = []string{"session", "text", "tenant"}
	// channelNames are the channels a session may come from.
	channelNames = []string{"web", "api", "slack", "telegram", "teams"}
	turnKeys     = []string{"call", "args", "id", "calls", "text", "output", "error", "error-status", "latency", "when", "label", "unchecked", "repeat"}
	callKeys     = []string{"tool", "args", "id"}
	// argRefKeys are the symbolic references allowed inside call args.
	argRefKeys = []string{"work-of", "worker-of", "task-of"}

	faultKinds        = []string{"provider-error", "latency", "cancel", "send", "detach", "status", "result", "crash"}
	providerFaultKeys = []string{"agent", "step", "run", "message", "probability"}
	latencyFaultKeys  = []string{"agent", "step", "run", "latency", "min", "max", "probability"}
	crashFaultKeys    = []string{"after", "delay", "max-delay", "jitter", "probability"}
	actionFaultKeys   = []string{"work", "message", "after", "jitter", "probability"}
	expectationKinds  = []string{"ordered", "unordered", "subset", "never", "count", "output-only-via-result", "foreground-output", "work-ends", "outcome", "prepare-fails", "tasks-end", "parents-first", "finding", "training"}
	expectationKeys   = []string{"name", "if"}
	subsetKeys        = []string{"of", "allowed"}
	neverKeys         = []string{"patterns", "after"}
	countKeys         = []string{"match", "min", "max"}
	outputOnlyKeys    = []string{"tool", "allow-unread"}
	workEndsKeys      = []string{"work", "in"}
	outcomeKeys       = []string{"agent", "contains", "equals", "failed"}
	prepareFailsKeys  = []string{"contains"}
	tasksEndKeys      = []string{"task", "in"}
	findingKeys       = []string{"contains"}
	trainingKeys      = []string{"tenant", "type", "agent", "contains", "rows", "min", "max"}
	statusRowKeys     = []string{"work", "label", "state", "result-available", "contains"}
	modeNames         = []string{"top", "foreground", "background"}
)

// patternKinds are the keys a pattern is written under. work-call is a
// tool-result of the work tool; result is short for tool-result; entry
// matches any kind.
var patternKinds = []string{"request", "response", "tool-call", "tool-result", "result", "work-call", "work",
	"detach", "send", "guidance", "run-start", "run-end", "fault", "action", "clock", "note", "platform", "entry"}

// patternFields are the fields of a pattern, whatever its kind: the keys
// of patternTable, where everything about each field lives.
var patternFields = patternFieldKeys()

// KeySet is the keys allowed in one section of a scenario file.
type KeySet struct {
	// Section names the place, as docs/scenarios.md heads it.
	Section string
	Keys    []string
}

// FileKeys returns every key a scenario file may use, by section, in the
// order docs/scenarios.md presents them. Tools that document or check the
// file format read it; the loader reads files with the same lists.
func FileKeys() []KeySet {
	sets := []KeySet{
		{"scenario", scenarioKeys},
		{"agents", agentKeys},
		{"prompt", promptKeys},
		{"tools", toolKinds},
		{"tool", funcToolKeys},
		{"run", runKeys},
		{"options", optionKeys},
		{"platform", platformKeys},
		{"sessions", sessionKeys},
		{"tasks", taskKeys},
		{"crons", cronKeys},
		{"actions", append(slices.Clone(actionKinds), actionKeys...)},
		{"action fields", actionTargetKeys},
		{"script", turnKeys},
		{"calls", callKeys},
		{"args", argRefKeys},
		{"faults", faultKinds},
		{"provider-error", providerFaultKeys},
		{"latency", latencyFaultKeys},
		{"crash", crashFaultKeys},
		{"work actions", actionFaultKeys},
		{"expect", append(slices.Clone(expectationKinds), expectationKeys...)},
		{"subset", subsetKeys},
		{"never", neverKeys},
		{"count", countKeys},
		{"output-only-via-result", outputOnlyKeys},
		{"work-ends", workEndsKeys},
		{"outcome", outcomeKeys},
		{"prepare-fails", prepareFailsKeys},
		{"tasks-end", tasksEndKeys},
		{"finding", findingKeys},
		{"training", trainingKeys},
		{"pattern kinds", patternKinds},
		{"pattern fields", patternFields},
		{"status", statusRowKeys},
		{"mode", modeNames},
	}
	out := make([]KeySet, len(sets))
	for i, s := range sets {
		out[i] = KeySet{Section: s.Section, Keys: slices.Clone(s.Keys)}
	}
	return out
}
