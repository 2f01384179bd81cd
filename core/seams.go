package core

import (
	"crypto/rand"
	"encoding/base32"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// IDKind says what an id names.
type IDKind string

// The kinds of ids the runtime draws.
const (
	IDRun  IDKind = "run"  // a running agent instance (the owner of Work)
	IDWork IDKind = "work" // a Work item
	IDSend IDKind = "send" // a send receipt
)

// IDSource draws ids. It is a seam for determinism: production uses random
// ids, tests and the simulator use sequential ones.
type IDSource interface {
	NewID(kind IDKind) string
}

// ScopedIDSource is an IDSource that can use what the id is for: the agent's
// ID for runs. The runtime uses it when the source offers it.
type ScopedIDSource interface {
	IDSource
	NewScopedID(kind IDKind, scope string) string
}

// SequentialIDs numbers ids per kind: w-1, send-1, ...; runs are numbered
// per agent, as research-agent#1, research-agent#2, which is how traces name
// them. It is safe for concurrent use.
type SequentialIDs struct {
	mu    sync.Mutex
	known [len(knownKinds)]int // the runtime's own kinds, by index in knownKinds
	n     map[IDKind]int       // any other kind
	// scopes count the runs of the first few scopes (agents) in place,
	// and scoped those of any scope past them.
	scopes  [4]scopeCount
	nScopes int
	scoped  map[string]int
}

// scopeCount is how many runs of a scope have been numbered.
type scopeCount struct {
	scope string
	n     int
}

// knownKinds are the kinds of ids the runtime draws, with their prefixes.
var knownKinds = [...]struct {
	kind   IDKind
	prefix string
}{{IDRun, "run-"}, {IDWork, "w-"}, {IDSend, "send-"}}

// NewScopedID numbers runs per agent and everything else per kind.
func (s *SequentialIDs) NewScopedID(kind IDKind, scope string) string {
	return numbered(s.count(kind, scope))
}

// skipScopedID counts the id NewScopedID would return, without writing it.
func (s *SequentialIDs) skipScopedID(kind IDKind, scope string) { s.count(kind, scope) }

// count counts the next id of the kind (of a run, in the scope when there
// is one) and returns what its text is made of.
func (s *SequentialIDs) count(kind IDKind, scope string) (prefix, sep string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if kind == IDRun && scope != "" {
		return scope, "#", s.countScopeLocked(scope)
	}
	if p, i := idPrefix(kind); i >= 0 {
		s.known[i]++
		return p, "", s.known[i]
	}
	if s.n == nil {
		s.n = map[IDKind]int{}
	}
	s.n[kind]++
	return string(kind), "-", s.n[kind]
}

// countScopeLocked counts the next run of the scope.
func (s *SequentialIDs) countScopeLocked(scope string) int {
	for i := range s.scopes[:s.nScopes] {
		if c := &s.scopes[i]; c.scope == scope {
			c.n++
			return c.n
		}
	}
	if s.nScopes < len(s.scopes) {
		s.scopes[s.nScopes] = scopeCount{scope: scope, n: 1}
		s.nScopes++
		return 1
	}
	if s.scoped == nil {
		s.scoped = map[string]int{}
	}
	s.scoped[scope]++
	return s.scoped[scope]
}

// numbered writes a sequential id, such as w-12 or research-agent#3, in
// one allocation (strconv.Itoa makes a string of its own from 100 on).
func numbered(prefix, sep string, n int) string {
	var buf [64]byte
	if len(prefix)+len(sep)+20 > len(buf) {
		return prefix + sep + strconv.Itoa(n)
	}
	b := append(append(buf[:0], prefix...), sep...)
	return string(strconv.AppendInt(b, int64(n), 10))
}

// idPrefix is the prefix of a kind of the runtime's own, with its index
// in knownKinds; i is -1 for another kind.
func idPrefix(kind IDKind) (prefix string, i int) {
	for i, k := range knownKinds {
		if k.kind == kind {
			return k.prefix, i
		}
	}
	return "", -1
}

// NewID returns the next id of the kind.
func (s *SequentialIDs) NewID(kind IDKind) string { return numbered(s.count(kind, "")) }

// RandomIDs draws 80 random bits per id, e.g. w_k3j5x2mq7t9a4bcd. The
// bits come from crypto/rand, read a block at a time for many ids (one
// read per id made the system call a large part of a short run); each bit
// serves one id only, so ids stay as unpredictable and as unique as the
// source.
type RandomIDs struct{}

var b32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// idBytes is how many random bytes an id takes; idBlock how many ids one
// read of the source serves.
const (
	idBytes = 10
	idBlock = 64
)

// idEntropy is the random bytes read ahead for ids, shared by every
// RandomIDs (the type holds nothing, so that its zero value is the
// production default).
var idEntropy struct {
	mu     sync.Mutex
	source io.Reader // crypto/rand.Reader; a seam for the specs
	buf    [idBytes * idBlock]byte
	off    int
}

func init() {
	idEntropy.source = rand.Reader
	idEntropy.off = len(idEntropy.buf)
}

// NewID returns a fresh random id of the kind.
func (RandomIDs) NewID(kind IDKind) string {
	p, _ := idPrefix(kind)
	p = strings.TrimSuffix(p, "-")
	if p == "" {
		p = string(kind)
	}
	var b [idBytes]byte
	drawIDBytes(&b)
	var out [64]byte
	if len(p)+1+b32.EncodedLen(idBytes) > len(out) {
		// A kind of id too long for the buffer on the stack.
		return p + "_" + b32.EncodeToString(b[:])
	}
	n := copy(out[:], p)
	out[n] = '_'
	b32.Encode(out[n+1:], b[:])
	return string(out[:n+1+b32.EncodedLen(idBytes)])
}

// drawIDBytes fills b with random bytes no other id has used.
func drawIDBytes(b *[idBytes]byte) {
	e := &idEntropy
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.off == len(e.buf) {
		if _, err := io.ReadFull(e.source, e.buf[:]); err != nil {
			// crypto/rand does not fail (it crashes the program first);
			// a source that does must not hand out a repeated id.
			panic("core: no random bits for an id: " + err.Error())
		}
		e.off = 0
	}
	copy(b[:], e.buf[e.off:e.off+idBytes])
	clear(e.buf[e.off : e.off+idBytes]) // what has served an id is kept nowhere
	e.off += idBytes
}

// PointKind names a semantic point at which an actor may be parked.
type PointKind uint8

// Semantic points.
const (
	// PointProviderStep: an agent run is about to seal a provider request.
	PointProviderStep PointKind = iota + 1
	// PointToolCall: an agent run is about to execute a tool call.
	PointToolCall
	// PointWorkTransition: a Work item is about to change state on the
	// child's side (starting, finishing).
	PointWorkTransition
)

func (k PointKind) String() string {
	switch k {
	case PointProviderStep:
		return "provider-step"
	case PointToolCall:
		return "tool-call"
	case PointWorkTransition:
		return "work-transition"
	}
	return "point"
}

// Point describes where an actor is.
type Point struct {
	Kind PointKind
	// Run is the agent instance at the point; Work the Work item it runs,
	// if it is a background child.
	Run  string
	Work string
	// Agent is the agent's ID; Step the provider step (for provider steps
	// and tool calls); Tool the tool name (for tool calls); Event the
	// lifecycle event (for Work transitions).
	Agent string
	Step  int
	Tool  string
	Event string
}

// Executor runs the runtime's concurrent activities and is told where they
// are. It is the seam through which the simulator takes control of
// scheduling: production runs goroutines and never parks.
type Executor interface {
	// Go starts fn as a new concurrent actor. name describes it.
	Go(name string, fn func())
	// Yield marks a semantic point of the calling actor where another actor
	// may run first.
	Yield(p Point)
	// Wait blocks the calling actor until one of the signals is closed and
	// returns its index. The runtime only ever closes signals, never sends
	// on them, so an executor may poll them.
	Wait(reason string, signals ...<-chan struct{}) int
}

// GoExecutor is the production executor: goroutines and select.
type GoExecutor struct{}

// Go starts fn on a new goroutine.
func (GoExecutor) Go(_ string, fn func()) { go fn() }

// Yield does nothing: the Go scheduler interleaves goroutines by itself.
func (GoExecutor) Yield(Point) {}

// Wait selects on the signals.
func (GoExecutor) Wait(_ string, signals ...<-chan struct{}) int {
	switch len(signals) {
	case 1:
		<-signals[0]
		return 0
	case 2:
		select {
		case <-signals[0]:
			return 0
		case <-signals[1]:
			return 1
		}
	case 3:
		select {
		case <-signals[0]:
			return 0
		case <-signals[1]:
			return 1
		case <-signals[2]:
			return 2
		}
	}
	cases := make([]reflect.SelectCase, len(signals))
	for i, s := range signals {
		cases[i] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(s)}
	}
	i, _, _ := reflect.Select(cases)
	return i
}
