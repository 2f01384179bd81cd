// Package scripted is a Provider that plays the model for every agent in a
// tree, turn by turn or as a function of the request.
//
// Give each agent a script of [Turn]s: tool calls, text, a final output, a
// provider error, latency. Turns may depend on the request ([Turn.When]) and
// may compute the response from it ([Turn.Respond], [Provider.Answer]).
// Every request is captured. A script never cycles: when an agent asks for a
// step its script does not cover, the step fails with an error that names
// the agent and the step, and the failure is kept in [Provider.Failures].
//
//	p := scripted.New().
//		Script("research-coordinator",
//			scripted.Calls(scripted.Use("research", map[string]any{"question": q, "run_in_background": true})),
//			scripted.Calls(scripted.Use("work", map[string]any{"action": "result", "id": "w-1"})),
//			scripted.Say("Leaves change colour because ...")).
//		Script("research-agent", scripted.Final(findings))
package scripted
