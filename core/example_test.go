package core_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/crux-sim/crux-sim/core"
)

// A coordinator starts research in the background, gets a work.ref at
// once, and rejoins the child's output only through an explicit work
// result. The provider here is a plain function standing in for the model;
// in a test it is the scripted provider, in production a real one.
func ExampleNew() {
	model := core.ProviderFunc(func(_ context.Context, req *core.Request) (*core.Response, error) {
		if req.Agent == "researcher" {
			return &core.Response{Text: "Chlorophyll breaks down in autumn."}, nil
		}
		if req.Step == 1 { // start the child in the background
			return &core.Response{ToolCalls: []core.ToolCall{{ID: "c1", Name: "research", Arguments: `{"run_in_background": true}`}}}, nil
		}
		last := req.Messages[len(req.Messages)-1] // the tool message of the previous call
		switch req.Step {
		case 2: // the call returned a work.ref: wait for its result
			var ref core.WorkRef
			if err := json.Unmarshal([]byte(last.Content), &ref); err != nil {
				return nil, err
			}
			fmt.Println("research returned", ref.Kind, ref.ID)
			args := fmt.Sprintf(`{"action": "result", "id": %q}`, ref.ID)
			return &core.Response{ToolCalls: []core.ToolCall{{ID: "c2", Name: core.WorkToolName, Arguments: args}}}, nil
		default: // the result carries the child's exact output
			fmt.Println("work result:", last.Content)
			return &core.Response{Text: "Leaves change colour because " + last.Content}, nil
		}
	})

	researcher := &core.Agent{ID: "researcher", Description: "Finds things out."}
	coordinator := &core.Agent{ID: "coordinator", Description: "Answers questions.",
		Tools: core.Tools{"research": core.Backgroundable(researcher)}}

	rt := core.New(core.Options{Provider: model, IDs: &core.SequentialIDs{}})
	defer rt.Close()
	res, err := rt.Run(context.Background(), coordinator, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Output.Raw)
	// Output:
	// research returned work.ref w-1
	// work result: Chlorophyll breaks down in autumn.
	// Leaves change colour because Chlorophyll breaks down in autumn.
}
