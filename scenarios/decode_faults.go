package scenarios

// The faults section: what the harness makes go wrong.

import (
	"fmt"
	"slices"
)

func (l *loader) faults(n *node) []Fault {
	var out []Fault
	for i, it := range l.seq(n, "faults") {
		what := fmt.Sprintf("fault %d", i+1)
		kind, v, ok := l.oneOf(it, what, "fault", faultKinds...)
		if !ok {
			continue
		}
		switch kind {
		case "provider-error", "latency":
			f := l.fields(v, what+" ("+kind+")", union(providerFaultKeys, latencyFaultKeys)...)
			fault := Fault{Kind: FaultProviderError, Agent: l.agentRef(f["agent"], what+" agent"), Step: l.integer(f["step"], what+" step", 1),
				Run: l.integer(f["run"], what+" run", 1), Probability: l.probability(f["probability"], what+" probability")}
			if f["agent"] == nil {
				l.errorf(v, "%s is missing key \"agent\"", what)
			}
			if kind == "latency" {
				fault.Kind = FaultLatency
				lo, loKey := f["min"], "min"
				if lo == nil {
					lo, loKey = f["latency"], "latency"
				} else if f["latency"] != nil {
					l.duration(f["latency"], what+" latency") // min wins; latency is still checked
				}
				fault.Latency, fault.LatencyMax = l.durationRange(lo, f["max"], what, loKey, "max")
				if f["latency"] == nil && f["min"] == nil {
					l.errorf(v, "%s needs latency, such as latency: 2s, or min and max to draw it from a range", what)
				}
				if f["message"] != nil {
					l.errorf(f["message"], "%s: a latency fault has no message", what)
				}
			} else {
				fault.Message = l.str(f["message"], what+" message")
				for _, k := range []string{"latency", "min", "max"} {
					if f[k] != nil {
						l.errorf(f[k], "%s: a provider error has no %s", what, k)
					}
				}
			}
			out = append(out, fault)
		case "crash":
			f := l.fields(v, what+" (crash)", crashFaultKeys...)
			fault := Fault{Kind: FaultCrash, Jitter: l.jitter(f["jitter"], what+" jitter"), Probability: l.probability(f["probability"], what+" probability")}
			fault.Delay, fault.DelayMax = l.durationRange(f["delay"], f["max-delay"], what, "delay", "max-delay")
			if f["after"] != nil {
				p := l.pattern(f["after"], what+" after", "")
				fault.After = &p
			}
			out = append(out, fault)
		default:
			f := l.fields(v, what+" ("+kind+")", actionFaultKeys...)
			fault := Fault{Kind: FaultAction, Action: kind, Work: l.ref(f["work"], what+" work"), Message: l.str(f["message"], what+" message"),
				Jitter: l.jitter(f["jitter"], what+" jitter"), Probability: l.probability(f["probability"], what+" probability")}
			if f["work"] == nil {
				l.errorf(v, "%s is missing key \"work\": which Work to %s, such as work: research", what, kind)
			}
			if kind == "send" && fault.Message == "" {
				l.errorf(v, "%s: send needs a non-empty message", what)
			}
			if kind != "send" && f["message"] != nil {
				l.errorf(f["message"], "%s: only send has a message", what)
			}
			if f["after"] != nil {
				p := l.pattern(f["after"], what+" after", "")
				fault.After = &p
			}
			out = append(out, fault)
		}
	}
	return out
}

// union reads a provider-error or latency fault with both kinds' keys, so
// that a key of the other kind gets a message that says so.
func union(a, b []string) []string {
	return uniq(append(slices.Clone(a), b...))
}
