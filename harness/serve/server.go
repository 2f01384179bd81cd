package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/harness/cassette"
	"github.com/crux-sim/crux-sim/internal/keys"
	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/scripted"
)

// ModelPrefix starts the model name that names the calling agent:
// crux-sim/research-agent.
const ModelPrefix = "crux-sim/"

// MaxBodyBytes bounds one request body.
const MaxBodyBytes = 16 << 20

// Options configure a Server.
type Options struct {
	// Scenario is what is served: its agents, script and expectations.
	Scenario *scenarios.Scenario
	// Cassette, when set, answers instead of the scenario's script, in
	// lockstep: each request must match the next recorded exchange of its
	// agent's run. Its divergences are reported at finish.
	Cassette *cassette.Cassette
	// IgnoreStatus does not compare status blocks with the cassette's.
	IgnoreStatus bool
	// Clock times scripted latency, recorded durations and the idle
	// timeout, and stamps the trace; default the real clock.
	Clock clockwork.Clock
	// IdleTimeout ends the session when no request has arrived for this
	// long; 0 means never.
	IdleTimeout time.Duration
	// Seed, Swarm and Plan choose which of the scenario's provider faults
	// fire (latency, provider errors), as they do for harness.Run: the
	// seed draws probabilities and latency ranges, and with Swarm its own
	// fault mix; a Plan names exactly the faults that fire. Draws follow
	// the order the requests arrive in. Faults that act inside the
	// runtime are not applied (see Unapplied).
	Seed  int64
	Swarm bool
	Plan  *harness.Plan
}

// ResultWaitTolerance is how far past the contract's 30 s cap a work
// result's wait may seem to run before the caps invariant breaks. The
// server sees a wait from the answer that made the call to the request
// that brings its result, so a client that waits exactly 30 s also shows
// the network's time and its own runtime's; an in-process run, on virtual
// time, is held to the cap exactly.
const ResultWaitTolerance = 2 * time.Second

// Server plays the model for every agent of a scenario over the Chat
// Completions protocol and turns what the client sends into the
// scenario's semantic trace. It is an http.Handler.
type Server struct {
	opts  Options
	sc    *scenarios.Scenario
	clock clockwork.Clock
	start time.Time
	model core.Provider
	prov  *scripted.Provider // the script, when no cassette
	rep   *cassette.Replayer // the cassette, when one
	// faults fire the scenario's provider faults in front of the model;
	// unapplied are those that act inside the runtime.
	faults    *harness.Faults
	unapplied []string
	mux       *http.ServeMux
	ctx       context.Context // ends at finish: cancels latency in flight
	stop      context.CancelFunc

	agents map[string]*agentInfo // by agent id
	order  []string              // agent ids, sorted

	active, sleeping atomic.Int64 // chat requests in flight; those waiting on the clock

	mu       sync.Mutex
	requests int // HTTP requests, numbered for findings
	sess     session
	idle     clockwork.Timer
	inflight sync.WaitGroup
	finished bool
	done     chan struct{}
	result   *Result
}

// Result is how a session ended.
type Result struct {
	// Outcome is the run judged: verdicts, invariant violations, findings
	// and the normalized trace, as crux-sim run reports them.
	Outcome *harness.Outcome
	// Divergences are the cassette's missing, mismatch and extra
	// divergences, when a cassette answered.
	Divergences []*cassette.Divergence
	// Reason says what ended the session.
	Reason string
}

// Passed reports whether every expectation held, no invariant broke and
// the replay (if any) followed its cassette.
func (r *Result) Passed() bool { return r.Outcome.Passed() && len(r.Divergences) == 0 }

// ErrUnservable is wrapped by New's errors for scenarios serve cannot play.
var ErrUnservable = errors.New("cannot serve the scenario")

// New prepares the scenario's agents and returns a Server ready to answer.
// A scenario whose agents do not prepare, or a platform scenario (whose
// runtime is crux-sim's own), cannot be served.
func New(opts Options) (*Server, error) {
	sc := opts.Scenario
	if sc == nil {
		return nil, fmt.Errorf("%w: no scenario", ErrUnservable)
	}
	if sc.Platform != nil {
		return nil, fmt.Errorf("%w %s: it is a platform scenario, whose sessions and tasks run on crux-sim's own platform; serve plays the model for a client's agents", ErrUnservable, sc.Name)
	}
	agents, err := collectAgents(sc)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrUnservable, sc.Name, err)
	}
	if opts.Clock == nil {
		opts.Clock = clockwork.NewRealClock()
	}
	s := &Server{opts: opts, sc: sc, clock: opts.Clock, start: opts.Clock.Now(), agents: agents,
		order: keys.Sorted(agents), done: make(chan struct{})}
	s.ctx, s.stop = context.WithCancel(context.Background())
	if opts.Cassette != nil {
		s.rep = cassette.NewReplayer(opts.Cassette, cassette.ReplayOptions{Sleep: s.sleep, IgnoreStatus: opts.IgnoreStatus})
		s.model = s.rep
	} else {
		s.prov = sc.Provider(scripted.Options{Sleep: s.sleep})
		s.model = s.prov
	}
	s.faults = harness.NewFaults(sc, harness.Options{Seed: opts.Seed, Swarm: opts.Swarm, Plan: opts.Plan})
	for _, f := range s.faults.InsideRuntime() {
		s.unapplied = append(s.unapplied, f+" acts inside the runtime, which is the client's own under serve: not applied")
	}
	s.sess.init(s)
	s.sess.findings = append(s.sess.findings, s.unapplied...)
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("/v1/chat/completions", s.chat)
	s.mux.HandleFunc("/chat/completions", s.chat)
	s.mux.HandleFunc("/v1/models", s.models)
	s.mux.HandleFunc("/models", s.models)
	s.mux.HandleFunc("/crux-sim/finish", s.finishRoute)
	s.mux.HandleFunc("/", s.notFound)
	if opts.IdleTimeout > 0 {
		s.idle = s.clock.AfterFunc(opts.IdleTimeout, func() {
			s.Finish(fmt.Sprintf("no request for %s (the idle timeout)", opts.IdleTimeout))
		})
	}
	return s, nil
}

// ServeHTTP implements http.Handler. Nothing a client sends makes it panic:
// a handler that would is answered with a 500 and a finding.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.finding(fmt.Sprintf("%s %s: crux-sim serve failed on it (%v); this is a bug in crux-sim", r.Method, r.URL.Path, p))
			writeError(w, http.StatusInternalServerError, "server_error", "internal_error", fmt.Sprintf("crux-sim serve failed on this request: %v", p))
		}
	}()
	s.mux.ServeHTTP(w, r)
}

// sleep waits d on the server's clock, counted as waiting (see Activity):
// scripted latency, a recorded duration, a latency fault. The timer's
// function ends the count, so that a driver of a fake clock sees the wake
// as the timer fires, not when the request's goroutine next runs.
func (s *Server) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	s.sleeping.Add(1)
	woke := make(chan struct{})
	t := s.clock.AfterFunc(d, func() {
		s.sleeping.Add(-1)
		close(woke)
	})
	select {
	case <-woke:
		return nil
	case <-ctx.Done():
		if t.Stop() {
			s.sleeping.Add(-1)
		} else {
			<-woke
		}
		return ctx.Err()
	}
}

// faultSink is where a request's provider faults go: the session's trace
// and the server's clock.
type faultSink struct{ s *Server }

func (k faultSink) Fault(e trace.Entry) {
	k.s.mu.Lock()
	defer k.s.mu.Unlock()
	k.s.sess.add(k.s.clock.Now(), e)
}

func (k faultSink) Sleep(ctx context.Context, d time.Duration) error { return k.s.sleep(ctx, d) }

// Unapplied describes the scenario's faults serve does not apply: those
// that act inside the runtime (a work action on a Work owner's behalf, a
// crash), which is the client's own. Each is also a finding of the run.
func (s *Server) Unapplied() []string { return slices.Clone(s.unapplied) }

// Activity says how many chat requests are in flight and how many of them
// are waiting on the clock (scripted latency, a recorded duration, a
// latency fault): a driver of a fake clock advances it only when every
// request is waiting.
func (s *Server) Activity() (inFlight, waiting int) {
	return int(s.active.Load()), int(s.sleeping.Load())
}

// Done is closed when the session has ended: by POST /crux-sim/finish, by
// the idle timeout or by Finish.
func (s *Server) Done() <-chan struct{} { return s.done }

// Result returns how the session ended, or nil while it runs.
func (s *Server) Result() *Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.finished {
		return nil
	}
	<-s.done
	return s.result
}

// Finish ends the session (once; later calls return the same result):
// requests in flight are cancelled and waited for, later ones refused,
// and the run is judged.
func (s *Server) Finish(reason string) *Result {
	s.mu.Lock()
	if s.finished {
		s.mu.Unlock()
		<-s.done
		return s.result
	}
	s.finished = true
	if s.idle != nil {
		s.idle.Stop()
	}
	s.mu.Unlock()
	s.stop()
	s.inflight.Wait()

	s.mu.Lock()
	ob := s.sess.observed()
	s.mu.Unlock()
	ob.Provider = s.prov
	ob.ResultWaitSlack = ResultWaitTolerance
	o := harness.Judge(s.sc, ob)
	o.Seed = s.opts.Seed // the seed the faults were drawn from
	o.Fired = harness.Plan{Faults: s.faults.Fired()}
	o.Violations = append(o.Violations, s.sess.violations()...)
	res := &Result{Outcome: o, Reason: reason}
	if s.rep != nil {
		res.Divergences = append(s.rep.Divergences(), s.rep.Extra()...)
		harness.AddDivergences(o, res.Divergences)
	}
	s.result = res
	close(s.done)
	return res
}

// begin counts a request in; false when the session is over.
func (s *Server) begin() (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	if s.finished {
		return s.requests, false
	}
	s.inflight.Add(1)
	if s.idle != nil {
		s.idle.Reset(s.opts.IdleTimeout)
	}
	return s.requests, true
}

func (s *Server) finding(f string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sess.findings = append(s.sess.findings, f)
}

// refuse answers a bad request with an OpenAI error body and notes it.
func (s *Server) refuse(w http.ResponseWriter, n int, status int, typ, code, msg string) {
	s.finding(fmt.Sprintf("request %d refused with HTTP %d: %s", n, status, msg))
	writeError(w, status, typ, code, msg)
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	writeJSON(w, status, errorBody(typ, code, msg))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":{"message":"crux-sim could not encode its answer","type":"server_error","param":null,"code":null}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	n, ok := s.begin()
	if ok {
		defer s.inflight.Done()
	}
	s.refuse(w, n, http.StatusNotFound, "invalid_request_error", "unknown_url",
		fmt.Sprintf("unknown route %s %s: crux-sim serve answers POST /v1/chat/completions, GET /v1/models and POST /crux-sim/finish", r.Method, clip(r.URL.Path, 80)))
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		n, _ := s.begin()
		s.inflight.Done()
		w.Header().Set("Allow", http.MethodGet)
		s.refuse(w, n, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "GET /v1/models lists the scenario's agents as models")
		return
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, id := range s.order {
		list.Data = append(list.Data, model{ID: ModelPrefix + id, Object: "model", Created: s.start.Unix(), OwnedBy: "crux-sim"})
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) finishRoute(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "POST /crux-sim/finish ends the session and answers with its verdicts")
		return
	}
	res := s.Finish("POST /crux-sim/finish")
	doc, err := harness.ReportJSON(res.Outcome)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "server_error", "", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(doc, '\n'))
}

// chat answers one chat completion request.
func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	n, ok := s.begin()
	if !ok {
		writeError(w, http.StatusServiceUnavailable, "server_error", "session_over", "the crux-sim serve session is over; start a new one")
		return
	}
	defer s.inflight.Done()
	s.active.Add(1)
	defer s.active.Add(-1)
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		s.refuse(w, n, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "chat completions are POSTed")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.refuse(w, n, http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", fmt.Sprintf("the body is over %d bytes", MaxBodyBytes))
			return
		}
		s.refuse(w, n, http.StatusBadRequest, "invalid_request_error", "bad_body", "the body could not be read: "+err.Error())
		return
	}
	req, err := decodeRequest(body)
	if err != nil {
		s.refuse(w, n, http.StatusBadRequest, "invalid_request_error", "invalid_request", err.Error())
		return
	}
	agent, err := s.identify(req)
	if err != nil {
		s.refuse(w, n, http.StatusNotFound, "invalid_request_error", "model_not_found", err.Error())
		return
	}

	s.mu.Lock()
	turn, err := s.sess.receive(agent, req, s.clock.Now())
	s.mu.Unlock()
	if err != nil {
		s.refuse(w, n, http.StatusBadRequest, "invalid_request_error", "invalid_request", err.Error())
		return
	}

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)()
	var resp *core.Response
	err = s.faults.Inject(ctx, turn.req, turn.run.ordinal, faultSink{s})
	if err == nil {
		resp, err = s.model.Step(ctx, turn.req)
	}

	s.mu.Lock()
	s.sess.answer(turn, resp, err, s.clock.Now())
	s.mu.Unlock()
	if err != nil {
		status, typ, code := errorStatus(err)
		writeError(w, status, typ, code, err.Error())
		return
	}
	if resp == nil {
		resp = &core.Response{}
	}
	id := fmt.Sprintf("chatcmpl-crux-%d", n)
	if req.Stream {
		writeStream(w, id, req.Model, s.clock.Now().Unix(), resp, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
		return
	}
	writeJSON(w, http.StatusOK, completionOf(id, req.Model, s.clock.Now().Unix(), resp))
}

// errorStatus says how a provider failure goes on the wire: a script's
// own provider error is a server error, or the status its error-status
// names (429 as OpenAI's rate limit, which clients retry); a provider
// error fault is a server error; a script that ran dry (or could not
// answer this request) or a replay that left its cassette is the
// client's doing, which a client does not retry.
func errorStatus(err error) (int, string, string) {
	var se *scenarios.ScriptedError
	var div *cassette.Divergence
	var inj *harness.InjectedError
	switch {
	case errors.As(err, &inj):
		return http.StatusInternalServerError, "server_error", ""
	case errors.As(err, &se) && se.Status == http.StatusTooManyRequests:
		return se.Status, "requests", "rate_limit_exceeded" // as OpenAI words a rate limit
	case errors.As(err, &se) && se.Status >= 400 && se.Status < 500:
		return se.Status, "invalid_request_error", ""
	case errors.As(err, &se) && se.Status >= 500:
		return se.Status, "server_error", ""
	case errors.As(err, &se):
		return http.StatusInternalServerError, "server_error", ""
	case errors.Is(err, scripted.ErrScript):
		return http.StatusBadRequest, "invalid_request_error", "script_failed"
	case errors.As(err, &div):
		return http.StatusBadRequest, "invalid_request_error", "cassette_" + string(div.Kind)
	case errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable, "server_error", "session_over"
	}
	return http.StatusInternalServerError, "server_error", ""
}

func completionOf(id, model string, created int64, resp *core.Response) completion {
	msg := respMessage{Role: "assistant"}
	if text := responseText(resp); text != "" || len(resp.ToolCalls) == 0 {
		msg.Content = &text
	}
	for _, c := range resp.ToolCalls {
		tc := chatToolCall{ID: c.ID, Type: "function"}
		tc.Function.Name, tc.Function.Arguments = c.Name, c.Arguments
		msg.ToolCalls = append(msg.ToolCalls, tc)
	}
	return completion{ID: id, Object: "chat.completion", Created: created, Model: model,
		Choices: []choice{{Index: 0, Message: msg, FinishReason: finishReason(resp)}}, Usage: usageOf(resp)}
}

// responseText is what the assistant message says: a structured output's
// document, as the adapter of a real provider would receive it, or text.
func responseText(resp *core.Response) string {
	if len(resp.Output) > 0 {
		return string(resp.Output)
	}
	return resp.Text
}

func finishReason(resp *core.Response) string {
	if len(resp.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func usageOf(resp *core.Response) usage {
	if resp.Usage == nil {
		return usage{}
	}
	return usage{PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens,
		TotalTokens: resp.Usage.PromptTokens + resp.Usage.CompletionTokens}
}

// streamPiece is how many bytes of text or arguments one delta carries, so
// that a client's reassembly is exercised.
const streamPiece = 24

// writeStream sends the response as server-sent events in OpenAI's chunk
// format: a role chunk, content deltas, each tool call's id and name then
// its arguments in pieces, the finish reason, optionally usage, [DONE].
// With usage asked for, every chunk before the usage chunk says
// "usage": null, as OpenAI's do; without, no chunk has the field.
func writeStream(w http.ResponseWriter, id, model string, created int64, resp *core.Response, withUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	var noUsage json.RawMessage // what a chunk without the usage says
	if withUsage {
		noUsage = json.RawMessage("null")
	}
	send := func(c chunk) {
		c.ID, c.Object, c.Created, c.Model = id, "chat.completion.chunk", created, model
		if c.Usage == nil {
			c.Usage = noUsage
		}
		if c.Choices == nil {
			c.Choices = []chunkChoice{}
		}
		b, _ := json.Marshal(c)
		_, _ = io.WriteString(w, "data: ")
		_, _ = w.Write(b)
		_, _ = io.WriteString(w, "\n\n")
		if flusher != nil {
			flusher.Flush()
		}
	}
	one := func(d delta, finish *string) chunk {
		return chunk{Choices: []chunkChoice{{Index: 0, Delta: d, FinishReason: finish}}}
	}
	text := responseText(resp)
	// The first delta has the role. A model that only calls tools says no
	// text: its content is null, as in the whole message, and its first
	// call starts in that delta; otherwise the content starts empty and
	// the text follows in pieces.
	onlyCalls := text == "" && len(resp.ToolCalls) > 0
	if !onlyCalls {
		send(one(delta{Role: "assistant", Content: json.RawMessage(`""`)}, nil))
	}
	for _, piece := range pieces(text) {
		q, _ := json.Marshal(piece)
		send(one(delta{Content: q}, nil))
	}
	for i, c := range resp.ToolCalls {
		head := deltaToolCall{Index: i, ID: c.ID, Type: "function"}
		head.Function.Name = c.Name
		d := delta{ToolCalls: []deltaToolCall{head}}
		if i == 0 && onlyCalls {
			d.Role, d.Content = "assistant", json.RawMessage("null")
		}
		send(one(d, nil))
		for _, piece := range pieces(c.Arguments) {
			d := deltaToolCall{Index: i}
			d.Function.Arguments = piece
			send(one(delta{ToolCalls: []deltaToolCall{d}}, nil))
		}
	}
	reason := finishReason(resp)
	send(one(delta{}, &reason))
	if withUsage {
		u, _ := json.Marshal(usageOf(resp))
		send(chunk{Usage: u})
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// pieces cuts s into pieces of about streamPiece bytes, never inside a
// UTF-8 sequence.
func pieces(s string) []string {
	var out []string
	for len(s) > 0 {
		n := min(streamPiece, len(s))
		for n < len(s) && !utf8Start(s[n]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// identify works out which agent of the scenario is calling: the model
// crux-sim/<agent> names it (or a top-level run name does), else the system
// text and the tools offered match exactly one agent's.
func (s *Server) identify(req *chatRequest) (*agentInfo, error) {
	if name, ok := strings.CutPrefix(req.Model, ModelPrefix); ok {
		if a := s.agents[name]; a != nil {
			return a, nil
		}
		if a := s.sc.Run.Agents[name]; a != nil {
			return s.agents[a.ID], nil
		}
		return nil, fmt.Errorf("the model %q names no agent of scenario %s; the agents are %s", clip(req.Model, 100), s.sc.Name, s.candidates(s.order))
	}
	system := ""
	if m := req.Messages[0]; m.Role == "system" || m.Role == "developer" {
		system = m.text
	}
	offered := make([]string, len(req.Tools))
	for i, t := range req.Tools {
		offered[i] = t.Function.Name
	}
	slices.Sort(offered)
	var match []string
	for _, id := range s.order {
		a := s.agents[id]
		if a.agent.Prompt.System == system && slices.Equal(a.sortedTools, offered) {
			match = append(match, id)
		}
	}
	switch len(match) {
	case 1:
		return s.agents[match[0]], nil
	case 0:
		return nil, fmt.Errorf("cannot tell which agent of scenario %s is calling: the model %q is not %s<agent>, and no agent has this request's system text and tools; name the agent with the model, one of %s",
			s.sc.Name, clip(req.Model, 100), ModelPrefix, s.candidates(s.order))
	}
	return nil, fmt.Errorf("cannot tell which agent of scenario %s is calling: the model %q is not %s<agent>, and the system text and tools match %d agents; name the agent with the model, one of %s",
		s.sc.Name, clip(req.Model, 100), ModelPrefix, len(match), s.candidates(match))
}

func (s *Server) candidates(ids []string) string {
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = ModelPrefix + id
	}
	return strings.Join(names, ", ")
}
