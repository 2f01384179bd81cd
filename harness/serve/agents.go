package serve

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/keys"
	"github.com/crux-sim/crux-sim/scenarios"
)

// agentInfo is one agent of the scenario as the server expects to see it.
type agentInfo struct {
	agent *core.Agent
	// top: the scenario starts it as a top-level agent.
	top bool
	// tools are what its requests should offer, as crux-sim's runtime
	// prepares them; sortedTools their names, sorted, for identification.
	tools       []core.ToolSpec
	sortedTools []string
	// children are its child tools by name.
	children map[string]childTool
	// background: it has a backgroundable child, so it gets the work tool.
	background bool
}

// childTool is a tool that runs a child.
type childTool struct {
	// agent is the child agent (nil for a background tool, which has no
	// provider steps).
	agent *core.Agent
	// background: the child is backgroundable.
	background bool
}

// collectAgents walks the scenario's agent tree and prepares each agent,
// with crux-sim's own runtime, to know the tools it offers.
func collectAgents(sc *scenarios.Scenario) (map[string]*agentInfo, error) {
	rt := core.New(core.Options{})
	defer rt.Close()
	out := map[string]*agentInfo{}
	var visit func(a *core.Agent, top bool) error
	visit = func(a *core.Agent, top bool) error {
		if a == nil {
			return nil
		}
		if info, seen := out[a.ID]; seen {
			if info.agent != a {
				return fmt.Errorf("two different agents have the id %q", a.ID)
			}
			info.top = info.top || top
			return nil
		}
		specs, err := rt.ToolSpecs(a)
		if err != nil {
			return err
		}
		info := &agentInfo{agent: a, top: top, tools: specs, children: map[string]childTool{}}
		out[a.ID] = info
		for _, sp := range specs {
			info.sortedTools = append(info.sortedTools, sp.Name)
		}
		slices.Sort(info.sortedTools)
		for _, tools := range []core.Tools{a.Tools, a.Prompt.Tools} {
			for _, name := range keys.Sorted(tools) {
				switch e := tools[name].(type) {
				case *core.Agent:
					info.children[name] = childTool{agent: e}
					if err := visit(e, false); err != nil {
						return err
					}
				case core.BackgroundableAgent:
					info.children[name] = childTool{agent: e.Agent(), background: true}
					info.background = true
					if err := visit(e.Agent(), false); err != nil {
						return err
					}
				case core.BackgroundableTool:
					info.children[name] = childTool{background: true}
					info.background = true
				}
			}
		}
		return nil
	}
	for _, name := range keys.Sorted(sc.Run.Agents) {
		if err := visit(sc.Run.Agents[name], true); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("it has no agents")
	}
	return out, nil
}

// childInput is the input a child call gives its child: the arguments
// without the reserved flag, unwrapped from {input} when the child's input
// is not an object.
func childInput(child *core.Agent, args string) (any, bool) {
	var m map[string]any
	if json.Unmarshal([]byte(args), &m) != nil {
		return nil, false
	}
	delete(m, core.BackgroundFlag)
	if in := child.Prompt.Input; in != nil && !in.IsObject() {
		v, ok := m["input"]
		return v, ok
	}
	if child.Prompt.Input == nil {
		return nil, true
	}
	return m, true
}
