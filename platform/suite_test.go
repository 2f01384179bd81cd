package platform_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/platform"
	"github.com/crux-sim/crux-sim/platform/store"
	"github.com/crux-sim/crux-sim/scripted"
	"github.com/crux-sim/crux-sim/sim"
)

func TestPlatform(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Platform (seed 03)")
}

var epoch = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// env is one platform on the simulator, in its fixed seedless order (the
// first runnable actor goes), with a scripted model.
type env struct {
	sim    *sim.Sim
	model  *scripted.Provider
	ids    *core.SequentialIDs
	store  *store.Memory
	opts   platform.Options
	p      *platform.Platform
	seen   []platform.Event
	closed bool
}

func agent(id string) *core.Agent {
	return &core.Agent{ID: id, Description: id, Prompt: core.Prompt{System: "You are " + id + "."}}
}

// newEnv makes a platform with agents coordinator, researcher, writer and
// scout, sweepers off unless mod turns them on. When the spec ends, the
// env closes (if the spec did not) and the spec fails if the platform left
// a goroutine behind: every spec's one setup and leak check.
func newEnv(mod ...func(*platform.Options)) *env {
	noLeaks := fixture.LeakCheck()
	e := bareEnv(mod...)
	DeferCleanup(func() {
		e.close()
		Expect(noLeaks()).To(Succeed(), "the platform left a goroutine behind")
	})
	return e
}

// bareEnv is newEnv without the cleanup, for a fuzz target outside Ginkgo;
// its caller closes it.
func bareEnv(mod ...func(*platform.Options)) *env {
	return simEnv(sim.Options{ReplayStrict: true, Start: epoch}, mod...)
}

// seededEnv is newEnv on a seeded simulator: runnable actors go in the
// seed's order, not the first one first, so that a spec pins an
// interleaving the fixed order never takes (a seed that the simulator's
// exploration found).
func seededEnv(seed int64, mod ...func(*platform.Options)) *env {
	noLeaks := fixture.LeakCheck()
	e := simEnv(sim.Options{Seed: seed, Start: epoch}, mod...)
	DeferCleanup(func() {
		e.close()
		Expect(noLeaks()).To(Succeed(), "the platform left a goroutine behind")
	})
	return e
}

// simEnv is bareEnv on a simulator made with so.
func simEnv(so sim.Options, mod ...func(*platform.Options)) *env {
	e := &env{sim: sim.New(so), ids: &core.SequentialIDs{}, store: store.NewMemory()}
	// Scripted latency passes on the virtual clock; an interrupted turn
	// stops waiting.
	e.model = scripted.New(scripted.Options{Sleep: func(ctx context.Context, d time.Duration) error {
		done := make(chan struct{})
		t := e.sim.Clock().AfterFunc(d, func() { close(done) })
		defer t.Stop()
		if e.sim.Wait("model latency", done, ctx.Done()) == 1 {
			return ctx.Err()
		}
		return nil
	}})
	e.opts = platform.Options{
		Core:       core.Options{Provider: e.model, Clock: e.sim.Clock(), IDs: e.ids, Executor: e.sim},
		Agents:     map[string]*core.Agent{},
		Store:      e.store,
		NoSweepers: true,
		Instance:   "proc-1",
	}
	for _, name := range []string{"coordinator", "researcher", "writer", "scout"} {
		e.opts.Agents[name] = agent(name)
	}
	e.opts.Observer = platform.ObserverFunc(func(ev platform.Event) { e.seen = append(e.seen, ev) })
	for _, m := range mod {
		m(&e.opts)
	}
	var err error
	e.p, err = platform.New(e.opts)
	Expect(err).NotTo(HaveOccurred())
	return e
}

// crash drops the process and starts a new one on the same store, clock
// and id source (platform.Restart, with no root to reopen).
func (e *env) crash(instance string) {
	e.opts.Instance = instance
	var err error
	e.p, _, err = e.p.Restart(e.opts, nil)
	Expect(err).NotTo(HaveOccurred())
}

// close closes the platform and runs the simulation until every actor has
// ended; a second close does nothing.
func (e *env) close() {
	if e.closed {
		return
	}
	e.closed = true
	Expect(e.p.Close()).To(Succeed())
	e.settle()
	Expect(e.sim.Live()).To(BeEmpty(), "actors left")
}

// runFor lets d of virtual time pass; settle runs what can run now.
func (e *env) runFor(d time.Duration) {
	ExpectWithOffset(1, e.sim.RunFor(d)).To(Succeed())
}

func (e *env) settle() { ExpectWithOffset(1, e.sim.Settle()).To(Succeed()) }

func (e *env) root(agentName string, opts ...func(*platform.SessionOptions)) string {
	so := platform.SessionOptions{Agent: agentName, User: "ada"}
	for _, o := range opts {
		o(&so)
	}
	id, err := e.p.NewSession(so)
	Expect(err).NotTo(HaveOccurred())
	return id
}

func (e *env) send(session, text string) {
	Expect(e.p.Send(session, text)).To(Succeed())
}

// ofType filters a log.
func ofType(log []platform.Event, t platform.EventType) []platform.Event {
	var out []platform.Event
	for _, e := range log {
		if e.Type == t {
			out = append(out, e)
		}
	}
	return out
}

func types(log []platform.Event) []platform.EventType {
	out := make([]platform.EventType, len(log))
	for i, e := range log {
		out[i] = e.Type
	}
	return out
}

// toolResult finds the content of the named tool's latest result in a
// session's history.
func toolResult(info platform.SessionInfo, tool string) (string, bool) {
	for i := len(info.History) - 1; i >= 0; i-- {
		m := info.History[i]
		if m.Role == core.RoleTool && m.ToolName == tool {
			return m.Content, !m.IsError
		}
	}
	return "", false
}

func jsonOf(s string) map[string]any {
	var m map[string]any
	ExpectWithOffset(1, json.Unmarshal([]byte(s), &m)).To(Succeed(), s)
	return m
}

func (e *env) info(id string) platform.SessionInfo {
	info, ok := e.p.Session(id)
	ExpectWithOffset(1, ok).To(BeTrue(), "session %s", id)
	return info
}

// lastUser returns the last user message a request carried.
func lastUser(req *core.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == core.RoleUser {
			return req.Messages[i].Content
		}
	}
	return ""
}

var use = scripted.Use
var calls = scripted.Calls
var say = scripted.Say

var _ = Describe("the spec environment", func() {
	It("lets a virtual day pass in an idle platform with nothing left running", func() {
		e := newEnv()
		e.runFor(24 * time.Hour)
		Expect(e.sim.Live()).To(BeEmpty())
		Expect(e.sim.Clock().Now()).To(Equal(epoch.Add(24 * time.Hour)))
	})
})
