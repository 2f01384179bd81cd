package scenarios

import "slices"

// The keys a scenario file may use, section by section. The loader reads
// every mapping through these lists, so they are the whole vocabulary of the
// file format: docs/scenarios.md documents each key, and a test holds the
// two in step.
var (
	scenarioKeys = []string{"name", "description", "tags", "agents", "run", "options", "script", "faults", "expect"}
	agentKeys    = []string{"description", "prompt", "tools", "max-steps"}
	promptKeys   = []string{"id", "input", "output", "system", "template"}
	// toolKinds are the single keys of a tool entry.
	toolKinds = []string{"tool", "background-tool", "agent", "background"}
	// funcToolKeys are the fields of a tool or background-tool.
	funcToolKeys = []string{"description", "input", "result", "echo", "error", "latency"}
	runKeys      = []string{"id", "model", "agents", "context"}
	optionKeys   = []string{"max-concurrent", "max-outstanding", "max-steps", "settle"}
	turnKeys     = []string{"call", "args", "id", "calls", "text", "output", "error", "latency", "when", "label", "unchecked"}
	callKeys     = []string{"tool", "args", "id"}
	// argRefKeys are the symbolic references allowed inside call args.
	argRefKeys = []string{"work-of"}

	faultKinds        = []string{"provider-error", "latency", "cancel", "send", "detach", "status", "result", "crash"}
	providerFaultKeys = []string{"agent", "step", "run", "message", "probability"}
	latencyFaultKeys  = []string{"agent", "step", "run", "latency", "min", "max", "probability"}
	crashFaultKeys    = []string{"after", "jitter", "probability"}
	actionFaultKeys   = []string{"work", "message", "after", "jitter", "probability"}
	expectationKinds  = []string{"ordered", "unordered", "subset", "never", "count", "output-only-via-result", "foreground-output", "work-ends", "outcome", "prepare-fails"}
	expectationKeys   = []string{"name"}
	subsetKeys        = []string{"of", "allowed"}
	neverKeys         = []string{"patterns", "after"}
	countKeys         = []string{"match", "min", "max"}
	outputOnlyKeys    = []string{"tool", "allow-unread"}
	workEndsKeys      = []string{"work", "in"}
	outcomeKeys       = []string{"agent", "contains", "equals", "failed"}
	prepareFailsKeys  = []string{"contains"}
	statusRowKeys     = []string{"work", "label", "state", "result-available", "contains"}
	modeNames         = []string{"top", "foreground", "background"}
)

// patternKinds are the keys a pattern is written under. work-call is a
// tool-result of the work tool; result is short for tool-result; entry
// matches any kind.
var patternKinds = []string{"request", "response", "tool-call", "tool-result", "result", "work-call", "work",
	"detach", "send", "guidance", "run-start", "run-end", "fault", "action", "clock", "note", "entry"}

// patternFields are the fields of a pattern, whatever its kind.
var patternFields = []string{"agent", "step", "tools", "tools-include", "tools-exclude", "status", "no-status",
	"message", "guidance", "tool", "in-background", "action", "work", "work-ref", "error", "contains", "equals",
	"not-found", "from", "to", "mode", "failed"}

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
