package core

import (
	"crypto/rand"
	"encoding/base32"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unsafe"
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
	// in the order of their first runs (the rest of them empty), and
	// scoped those of any scope past them.
	scopes [4]scopeCount
	scoped map[string]int
	// text is the room ids are written in, one after another, so that an
	// allocation holds the text of many (see writeLocked): textCap bytes,
	// textLen of them written. (Not a slice: a source is held in the
	// allocations of those who use it, and this keeps it small.)
	text             *byte
	textLen, textCap uint32
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
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeLocked(s.countLocked(kind, scope))
}

// skipScopedID counts the id NewScopedID would return, without writing it.
func (s *SequentialIDs) skipScopedID(kind IDKind, scope string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.countLocked(kind, scope)
}

// countLocked counts the next id of the kind (of a run, in the scope when
// there is one) and returns what its text is made of.
func (s *SequentialIDs) countLocked(kind IDKind, scope string) (prefix, sep string, n int) {
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
	for i := range s.scopes {
		switch c := &s.scopes[i]; c.scope {
		case scope:
			c.n++
			return c.n
		case "": // no scope is empty (see countLocked)
			*c = scopeCount{scope: scope, n: 1}
			return 1
		}
	}
	if s.scoped == nil {
		s.scoped = map[string]int{}
	}
	s.scoped[scope]++
	return s.scoped[scope]
}

// The room ids are written in: the first allocation of a source holds
// the few ids of a short run, and each later one twice the one before,
// up to idTextMax, so that a run of many ids allocates for a few dozen
// at a time, and an id keeps no more than idTextMax bytes from being
// collected.
const (
	idTextFirst = 64
	idTextMax   = 1024
)

// writeLocked writes a sequential id, such as w-12 or research-agent#3,
// after the ids before it in the source's text. The bytes of an id are
// never written again, so its string can share them.
func (s *SequentialIDs) writeLocked(prefix, sep string, n int) string {
	need := len(prefix) + len(sep) + digits(n)
	if int(s.textCap-s.textLen) < need {
		size := idTextFirst
		if s.textCap > 0 {
			size = min(2*int(s.textCap), idTextMax)
		}
		room := make([]byte, max(size, need))
		s.text, s.textLen, s.textCap = unsafe.SliceData(room), 0, uint32(len(room))
	}
	// The id is appended to the written text, in room that holds it.
	b := unsafe.Slice(s.text, s.textCap)[s.textLen:s.textLen]
	b = strconv.AppendInt(append(append(b, prefix...), sep...), int64(n), 10)
	s.textLen += uint32(len(b))
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// digits is how many decimal digits n > 0 is written with.
func digits(n int) int {
	d := 1
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
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
func (s *SequentialIDs) NewID(kind IDKind) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeLocked(s.countLocked(kind, ""))
}

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
