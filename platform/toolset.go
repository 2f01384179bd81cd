package platform

import (
	"fmt"
	"slices"
	"strings"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/keys"
	"github.com/crux-sim/crux-sim/platform/store"
)

// The toolset policy: which platform tools each kind of session is
// offered (platformToolsFor, pure, so that the rules live in one place),
// and the agent variant a session runs with them (variantLocked).

// Tool families. The coordinator family is what a worker loses; the task
// worker family exists only in task attempts; the loop tools only in loop
// runs.
var (
	coordinatorFamily = []string{ToolSpawnWorker, ToolSendWorkerMessage, ToolStopWorker}
	// cronFamily is the user-owned schedules' tools.
	cronFamily = []string{ToolCronCreate, ToolCronDelete, ToolCronList}
	// delegateStripped is what every delegated child loses, whatever its
	// preset or its parent's allowlist: the path to the user
	// (ask_user_question, and the user-owned schedules whose runs post
	// into the user's conversation) and the coordinator family. A
	// delegated child keeps spawn_task: its tasks run with its authority.
	delegateStripped = slices.Concat([]string{ToolAskUserQuestion}, coordinatorFamily, cronFamily)
	taskWorkerFamily = []string{ToolWorkerComplete, ToolWorkerBlock, ToolWorkerContext}
	// generalTools are the platform tools every session kind may have,
	// subject to the rules above and to allowlists and exclusions.
	generalTools = []string{ToolAskUserQuestion, ToolBoardClaim, ToolBoardNote, ToolBoardRead, ToolCancelTask,
		ToolCreateArtifact, ToolCronCreate, ToolCronDelete, ToolCronList, ToolDelegateTask, ToolListFiles,
		ToolReadFile, ToolSendWorkerMessage, ToolSpawnTask, ToolSpawnWorker, ToolStopWorker, ToolUnblockTask,
		ToolWriteFile}
)

// PlatformToolPrefix qualifies a name in excluded or allowed tools as the
// platform's tool only: excluded_tools: [platform:read_file] removes the
// platform's read_file and keeps an agent's own read_file. A bare name
// means the agent's tool and the platform's alike.
const PlatformToolPrefix = "platform:"

// ToolNames lists every platform tool a session may be offered, sorted:
// the general tools, the task worker's and the loop tools.
func ToolNames() []string {
	out := slices.Concat(generalTools, taskWorkerFamily, []string{ToolLoopComplete, ToolLoopWait})
	slices.Sort(out)
	return slices.Compact(out)
}

// platformToolsFor is the toolset policy: which platform tools a session
// is offered. It is pure, so the rules live in one place.
func platformToolsFor(s *session, maxDepth int) []string {
	var out []string
	for _, name := range generalTools {
		if !permits(s.allowed, s.excluded, name, true) {
			continue
		}
		switch s.kind {
		case KindWorker, KindTask:
			if slices.Contains(coordinatorFamily, name) {
				continue
			}
		case KindDelegate:
			if slices.Contains(delegateStripped, name) {
				continue
			}
		}
		if name == ToolDelegateTask && !canDelegate(s, maxDepth) {
			continue
		}
		out = append(out, name)
	}
	if s.kind == KindTask {
		out = append(out, taskWorkerFamily...)
	}
	if s.kind == KindScheduled {
		switch s.scheduleKind {
		case store.ScheduleLoop:
			out = append(out, ToolLoopComplete)
		case store.ScheduleDynamic:
			out = append(out, ToolLoopWait)
		}
	}
	slices.Sort(out)
	return out
}

// permits applies an allowlist (nil: none) and exclusions to a tool name,
// a platform tool's (which "platform:NAME" also names) or an agent's own.
func permits(allowed, excluded []string, name string, platformTool bool) bool {
	named := func(list []string) bool {
		return slices.Contains(list, name) || platformTool && slices.Contains(list, PlatformToolPrefix+name)
	}
	return (allowed == nil || named(allowed)) && !named(excluded)
}

// authority is what a session may do, as every session it creates starts
// from it and every durable row it creates (a task, a schedule) carries
// it: its own exclusions and allowlist, and every general platform tool
// its kind or depth denies it, as platform:NAME so that an agent's own tool
// of that name is not touched. So whatever a session creates, by any
// route, runs with no more authority than it had.
func authority(s *session, maxDepth int) store.Authority {
	a := store.Authority{Excluded: slices.Clone(s.excluded), Restricted: s.allowed != nil, Allowed: slices.Clone(s.allowed)}
	offered := platformToolsFor(s, maxDepth)
	for _, name := range generalTools {
		if !slices.Contains(offered, name) && permits(s.allowed, s.excluded, name, true) {
			a.Excluded = append(a.Excluded, PlatformToolPrefix+name)
		}
	}
	return a
}

// inherit gives a new session the authority it starts from.
func (s *session) inherit(a store.Authority) {
	s.excluded = slices.Clone(a.Excluded)
	s.allowed = nil
	if a.Restricted {
		s.allowed = slices.Clone(a.Allowed)
		if s.allowed == nil {
			s.allowed = []string{}
		}
	}
}

// reachesUser reports whether a session has a path to the user, so that
// the runs of a schedule it creates may post into the user's conversation:
// a root session is that conversation; any other session only while it is
// offered ask_user_question.
func reachesUser(s *session, maxDepth int) bool {
	return s.kind == KindRoot || slices.Contains(platformToolsFor(s, maxDepth), ToolAskUserQuestion)
}

// canDelegate: below the depth cap, and not a leaf child.
func canDelegate(s *session, maxDepth int) bool {
	if int(s.depth) >= maxDepth {
		return false
	}
	return s.kind != KindDelegate || s.role == RoleOrchestrator
}

type variantKey struct {
	tmpl  *core.Agent
	tools string
}

// variantLocked returns the agent a session runs: its template with the
// authored tools it may use and the platform tools of its kind, and a
// middleware that records provider-step activity. Variants are cached per
// template and toolset, because the runtime prepares each *Agent once.
func (p *Platform) variantLocked(s *session) (*core.Agent, error) {
	if s.variant != nil {
		return s.variant, nil
	}
	// Most sessions have no allowlist and no exclusions: their toolset
	// depends only on what kind of session they are, so the variant is
	// found without computing the toolset (a loop makes a session an
	// hour).
	var quick quickKey
	if s.allowed == nil && len(s.excluded) == 0 {
		quick = quickKey{tmpl: s.tmpl, kind: s.kind, schedule: s.scheduleKind, delegates: canDelegate(s, p.opts.MaxDelegationDepth)}
		if a := p.quickVariantLocked(quick); a != nil {
			s.variant = a
			return a, nil
		}
	}
	plat := platformToolsFor(s, p.opts.MaxDelegationDepth)
	var authored []string
	for _, name := range keys.Sorted(s.tmpl.Tools) {
		if !permits(s.allowed, s.excluded, name, false) {
			continue
		}
		// Only a clash among the tools actually offered is one: a platform
		// tool this session's kind, allowlist or exclusions remove leaves
		// the name to the agent's own tool.
		if slices.Contains(plat, name) {
			return nil, fmt.Errorf("%w: agent %q has its own tool %q and this %s session is also offered the platform's %q; "+
				"rename the agent's tool, or keep only the agent's with excluded_tools: [%s%s]",
				ErrToolCollision, s.tmpl.ID, name, s.kind, name, PlatformToolPrefix, name)
		}
		authored = append(authored, name)
	}
	key := variantKey{tmpl: s.tmpl, tools: strings.Join(authored, ",") + "|" + strings.Join(plat, ",")}
	if a := p.variants[key]; a != nil {
		s.variant = a
		if quick.tmpl != nil {
			p.quick[quick] = a
		}
		return a, nil
	}
	a := *s.tmpl
	a.Prompt.Input = nil
	a.Prompt.Render = nil
	a.Tools = make(core.Tools, len(authored)+len(plat))
	for _, name := range authored {
		a.Tools[name] = s.tmpl.Tools[name]
	}
	for _, name := range plat {
		a.Tools[name] = p.tools[name]
	}
	if len(s.tmpl.Use) > 0 {
		a.Use = append([]core.Middleware{p.activity}, s.tmpl.Use...)
	}
	p.variants[key] = &a
	if quick.tmpl != nil {
		p.quick[quick] = &a
	}
	s.variant = &a
	return &a, nil
}

// quickVariantLocked returns the variant quick holds at k, nil when none
// was made. The two last found are compared first: a loop's runs are one
// kind of session after another, two loops' runs take turns, and hashing
// the key is most of a map lookup's cost.
func (p *Platform) quickVariantLocked(k quickKey) *core.Agent {
	last := &p.lastQuick
	switch {
	case last[0].a != nil && last[0].key == k:
	case last[1].a != nil && last[1].key == k:
		last[0], last[1] = last[1], last[0]
	default:
		a := p.quick[k]
		if a == nil {
			return nil
		}
		last[0], last[1] = quickFound{k, a}, last[0]
	}
	return last[0].a
}

// quickFound is a variant found in quick, and its key.
type quickFound struct {
	key quickKey
	a   *core.Agent
}

// quickKey is what decides the toolset of a session without an allowlist
// or exclusions (see platformToolsFor).
type quickKey struct {
	tmpl      *core.Agent
	kind      Kind
	schedule  store.ScheduleKind
	delegates bool
}
