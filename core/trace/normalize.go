package trace

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/fewmap"
	"github.com/crux-sim/crux-sim/internal/jsonenc"
	"github.com/crux-sim/crux-sim/internal/slab"
)

// Normalize returns a copy of the trace with ids renamed in order of
// appearance (runs as agent#n, Work as w-n, tool calls as call-n, send
// receipts as send-n) where ids stand: the fields that hold them, the id
// column of status rows, and the id keys of the work tool's arguments,
// projections, receipts and work.refs; the timestamps of those become
// offsets from the start, such as +5s. Content is never rewritten: a model's
// text that happens to spell an id or a time stays as it was.
func (t *Trace) Normalize() *Trace {
	n, _ := t.NormalizeIDs()
	return n
}

// NormalizeIDs is Normalize that also returns the renaming it applied, for
// callers that hold ids from outside the trace.
func (t *Trace) NormalizeIDs() (*Trace, func(id string) string) {
	out := &Trace{Name: t.Name, Seed: t.Seed, Start: t.Start, Entries: make([]Entry, len(t.Entries))}
	return out, t.normalizeInto(out.Entries)
}

// NormalizeInPlace is NormalizeIDs that rewrites t's own entries instead of
// copying them, for a caller that owns them: one that took them from a
// Recorder it will not use again. An entry's part is rewritten where it
// is (a Recorder's parts are its own); the slices a part holds (messages,
// calls, status rows) are still copied before they are changed, since they
// may be shared with the run that produced them.
func (t *Trace) NormalizeInPlace() func(id string) string {
	return t.normalizeInto(t.Entries)
}

// normalizeInto writes the normalized entries of t into dst, which has
// t's length and may be t.Entries itself.
func (t *Trace) normalizeInto(dst []Entry) func(id string) string {
	// Each kind of id has its own names: a provider's call ids and the
	// runtime's Work ids come from different sources and may coincide.
	// Only the ids whose name is not already their id are renamed (a
	// simulation's sequential ids are their own normal form, so there is
	// usually nothing to rename).
	// js.out holds the strings the normalization writes, the names given
	// among them.
	var js jsonFixer
	js.out = slab.SizedTexts(slab.MinText, maxTexts)
	ids := renamer{entries: t.Entries}
	for i := range t.Entries {
		e := &t.Entries[i]
		if e.Run != "" && e.Kind == RunStart {
			ids.see(runID, e.Run, e.Agent, &js.out)
		}
		if e.Work != "" && e.Kind == Work && e.From() == "" {
			ids.see(workID, e.Work, "w", &js.out)
		}
		for _, c := range e.Calls() {
			if c.ID != "" {
				ids.see(callID, c.ID, "call", &js.out)
			}
		}
		if e.Kind == ToolResult && e.Action == "send" && !e.IsError {
			var rec struct {
				ID string `json:"id"`
			}
			if json.Unmarshal([]byte(e.Content), &rec) == nil && rec.ID != "" {
				ids.see(sendID, rec.ID, "send", &js.out)
			}
		}
	}
	run, work, call := ids.of(runID), ids.of(workID), ids.of(callID)
	// Ids and times are renamed only where they stand: in the fields that
	// hold them, in the status rows' id column, and in the work tool's JSON
	// (its arguments, projections, receipts and work.refs) at the keys
	// that hold them. Content (text, outputs, inputs, other tools' results)
	// is never rewritten, whatever it holds.
	js.run, js.work, js.send, js.stamps = run, work, ids.of(sendID), offsets{start: t.Start}
	js.renames = len(ids.rename[runID])+len(ids.rename[workID])+len(ids.rename[sendID]) > 0
	js.scan = scans.Get().(*jsonScan)
	// A run changes a few slices, a platform's week hundreds.
	js.msgs, js.calls, js.rows = slab.Sized[core.Message](2, 64), slab.Sized[core.ToolCall](2, 64), slab.Sized[string](2, 64)
	defer js.done()

	inPlace := len(dst) > 0 && &dst[0] == &t.Entries[0]
	if !js.renames && len(call) == 0 && !generalOnly {
		js.fixDocuments(t.Entries, dst, inPlace)
		return ids.any()
	}
	var words *idWords // the ids a detail may name, when some are renamed
	if js.renames {
		words = js.scan.idWords(run, work)
	}
	renamesRuns, renamesWork := len(run) > 0, len(work) > 0
	var calls sharedCalls
	lastRun, lastRunName, prevRun, prevRunName := "", "", "", ""
	lastRunWord, prevRunWord := false, false // whether the runs are words whole
	for i := range t.Entries {
		if !inPlace {
			dst[i] = t.Entries[i]
		}
		e := &dst[i]
		raw := e.Run // the run's id, before it is renamed
		// A run's entries come one after another, or between another
		// run's (a platform's session and the child it fired): its name is
		// looked up once for them (and not at all when no run is renamed).
		if renamesRuns {
			if e.Run != lastRun {
				if e.Run == prevRun {
					prevRun, prevRunName, lastRun, lastRunName = lastRun, lastRunName, prevRun, prevRunName
					prevRunWord, lastRunWord = lastRunWord, prevRunWord
				} else {
					prevRun, prevRunName, lastRun, lastRunName = lastRun, lastRunName, e.Run, run.of(e.Run)
					prevRunWord, lastRunWord = lastRunWord, isWord(e.Run)
				}
			}
			e.Run = lastRunName
		}
		if renamesWork && e.Work != "" {
			e.Work = work.of(e.Work)
		}
		js.fixResult(e)
		if js.renames {
			// (With no run renamed, a detail's run needs no name.)
			e.Detail = fixDetail(e.Detail, raw, e.Run, renamesRuns && lastRunWord, run, work, words, &js.out)
		}
		// A copy's parts are shared with the trace normalized from: they
		// are copied before they change. A trace normalized in place owns
		// its parts (its entries' slices may still be the run's).
		switch p := e.Part.(type) {
		case *RunPart:
			if parent := run.of(p.Parent); parent != p.Parent {
				if !inPlace {
					p = e.EditRun()
				}
				p.Parent = parent
			}
		case *RequestPart:
			status := p.Status
			if js.renames {
				status = fixRows(status, work, &js)
			}
			if msgs := fixMessages(p.Messages, call, &js); !sameSlice(status, p.Status) || !sameSlice(msgs, p.Messages) {
				if !inPlace {
					p = e.EditRequest()
				}
				p.Status, p.Messages = status, msgs
			}
		case *ResponsePart:
			fixResponse(e, p, call, &js, inPlace)
		}
		calls.fix(e, call, &js)
		if e.Ref != nil {
			if rid := work.of(e.Ref.ID); rid != e.Ref.ID {
				r := *e.Ref
				r.ID = rid
				e.Ref = &r
			}
		}
	}
	return ids.any()
}

// generalOnly makes every normalization take the general loop, for the
// specs that compare fixDocuments with it.
var generalOnly = false

// fixDocuments is the loop of normalizeInto for a trace none of whose ids
// is renamed (a simulation's ids are their own names): only the documents
// its entries carry can change (the work tool's times, a platform's
// next_run), in tool results, calls' arguments and requests' messages; a
// run, Work or call id, a parent, a ref, a status row and a detail stay as
// they are. It does what the general loop does with nothing to rename,
// without its checks of each entry's ids.
func (js *jsonFixer) fixDocuments(src, dst []Entry, inPlace bool) {
	var calls sharedCalls
	for i := range src {
		if !inPlace {
			dst[i] = src[i]
		}
		e := &dst[i]
		js.fixResult(e)
		switch p := e.Part.(type) {
		case *RequestPart:
			if msgs := fixMessages(p.Messages, nil, js); !sameSlice(msgs, p.Messages) {
				if !inPlace {
					p = e.EditRequest()
				}
				p.Messages = msgs
			}
		case *ResponsePart:
			fixResponse(e, p, nil, js, inPlace)
		}
		calls.fix(e, nil, js)
	}
}

// fixResult normalizes a tool result's content: the work tool's JSON
// (its projections, receipts and work.refs), or another tool's, whose
// content is never rewritten.
func (js *jsonFixer) fixResult(e *Entry) {
	if e.Kind == ToolResult { // the test inline, for the entries of other kinds
		js.fixContent(e)
	}
}

func (js *jsonFixer) fixContent(e *Entry) {
	e.Content = js.fix(e.Content, e.Action != "" || e.Ref != nil || (e.Call != nil && e.Call.Name == core.WorkToolName))
}

// fixResponse normalizes a response's calls, in a copy of the part when
// the trace is not normalized in place (its parts are shared with the
// trace normalized from).
func fixResponse(e *Entry, p *ResponsePart, call names, js *jsonFixer, inPlace bool) {
	if calls := fixCalls(p.Calls, call, js); !sameSlice(calls, p.Calls) {
		if !inPlace {
			p = e.EditResponse()
		}
		p.Calls = calls
	}
}

// sharedCalls normalizes entries' calls: a call's entry and its result's
// share the call, and share its normalized copy too.
type sharedCalls struct{ last, fixed *core.ToolCall }

// fix normalizes e's call (its id by call, the work tool's arguments).
func (sc *sharedCalls) fix(e *Entry, call names, js *jsonFixer) {
	switch { // inline, for the entries without a call or with the last one
	case e.Call == nil:
	case e.Call == sc.last:
		e.Call = sc.fixed
	default:
		sc.fixNew(e, call, js)
	}
}

func (sc *sharedCalls) fixNew(e *Entry, call names, js *jsonFixer) {
	sc.last = e.Call
	if cid, args := call.of(e.Call.ID), workArgs(e.Call, js); cid != e.Call.ID || args != e.Call.Arguments {
		c := *e.Call
		c.ID, c.Arguments = cid, args
		e.Call = &c
	}
	sc.fixed = e.Call
}

type idKind int

const (
	runID idKind = iota
	workID
	callID
	sendID
	idKinds
)

// renamer holds, per kind of id, the ids given a name: the renaming of
// those whose name differs, and those that are their own name. While
// every id of a kind has been its own name (a simulation's sequential
// ids), the names given are known from the counts alone, and no set of
// them is kept: a trace with nothing to rename costs no allocation per id.
// Once one is renamed, the ids that are their own name are kept beside the
// renaming, and only those: a trace whose ids are all renamed (a
// platform's sessions) keeps each id once, in its renaming.
type renamer struct {
	// mixed is set once an id of the kind was renamed; own holds, from
	// then on, the ids given their own name (nil while there is none).
	mixed  [idKinds]bool
	own    [idKinds]map[string]struct{}
	rename [idKinds]map[string]string
	// counts counts the names given of each kind but runs, which are
	// counted per agent.
	counts   [idKinds]int
	perAgent fewmap.Map[int] // runs counted per agent
	// entries are the trace's: their run starts are the room the run
	// maps start with, counted once a run is renamed.
	entries []Entry
}

// prefixes and seps spell a kind's names: w-1, call-1, send-1; a run's
// prefix is its agent's id (coord#1).
var (
	prefixes = [idKinds]string{workID: "w", callID: "call", sendID: "send"}
	seps     = [idKinds]string{runID: "#", workID: "-", callID: "-", sendID: "-"}
)

func (r *renamer) given(k idKind, prefix string) int {
	if k == runID {
		n, _ := r.perAgent.Get(prefix)
		return n
	}
	return r.counts[k]
}

func (r *renamer) has(k idKind, raw string) bool {
	if r.mixed[k] {
		if _, ok := r.rename[k][raw]; ok {
			return true
		}
		_, ok := r.own[k][raw]
		return ok
	}
	// Every name so far is its own id: raw is one if it spells the
	// prefix, the separator and a number already given.
	i := strings.LastIndex(raw, seps[k])
	if i < 0 || (k != runID && raw[:i] != prefixes[k]) {
		return false
	}
	n, err := strconv.Atoi(raw[i+len(seps[k]):])
	return err == nil && n >= 1 && n <= r.given(k, raw[:i]) && spells(raw[i+len(seps[k]):], int64(n))
}

// see gives raw the next name of its kind (see name) unless it has one.
// An id seen first is mostly the next name of its kind, as a simulation
// gives them: while every id has been its own name, that one is counted
// without reading its number.
func (r *renamer) see(k idKind, raw, prefix string, out *slab.Texts) {
	if !r.mixed[k] {
		if n := r.given(k, prefix) + 1; spellsName(raw, prefix, seps[k], n) {
			r.count(k, prefix, n)
			return
		}
	}
	if !r.has(k, raw) {
		r.name(k, raw, prefix, out)
	}
}

// spellsName reports whether raw is prefix, sep and n.
func spellsName(raw, prefix, sep string, n int) bool {
	return len(raw) > len(prefix)+len(sep) && strings.HasPrefix(raw, prefix) &&
		raw[len(prefix):len(prefix)+len(sep)] == sep && spells(raw[len(prefix)+len(sep):], int64(n))
}

// count counts the name n given to an id of kind k.
func (r *renamer) count(k idKind, prefix string, n int) {
	if k == runID {
		r.perAgent.Set(prefix, n)
	} else {
		r.counts[k] = n
	}
}

// name gives raw the next name of its kind (prefix is the agent's id for a
// run, the kind's own prefix otherwise), written in out.
func (r *renamer) name(k idKind, raw, prefix string, out *slab.Texts) {
	n := r.given(k, prefix) + 1
	r.count(k, prefix, n)
	sep := seps[k]
	if spellsName(raw, prefix, sep, n) {
		if r.mixed[k] {
			r.keepOwn(k, raw)
		}
		return
	}
	if !r.mixed[k] {
		// The first id that is not its own name: from now on the ids
		// given their own name are kept, starting with every one given
		// so far.
		r.mixed[k] = true
		if k == runID {
			for agent, count := range r.perAgent.All {
				if agent == prefix {
					count--
				}
				for j := 1; j <= count; j++ {
					r.keepOwn(k, agent+sep+strconv.Itoa(j))
				}
			}
		} else {
			for j := 1; j < n; j++ {
				r.keepOwn(k, prefix+sep+strconv.Itoa(j))
			}
		}
	}
	if r.rename[k] == nil {
		r.rename[k] = make(map[string]string, r.room(k))
	}
	b := append(append(out.Open(len(prefix)+len(sep)+20), prefix...), sep...)
	r.rename[k][raw] = out.Close(strconv.AppendInt(b, int64(n), 10))
}

// keepOwn keeps raw among the ids of kind k given their own name.
func (r *renamer) keepOwn(k idKind, raw string) {
	if r.own[k] == nil {
		r.own[k] = make(map[string]struct{})
	}
	r.own[k][raw] = struct{}{}
}

// room is the room a map of kind k starts with: every run, for runs (a
// run started is named once), none given for the other kinds.
func (r *renamer) room(k idKind) int {
	if k != runID {
		return 0
	}
	runs := 0
	for i := range r.entries {
		if r.entries[i].Kind == RunStart {
			runs++
		}
	}
	return runs
}

// names is the renaming of one kind of id.
type names map[string]string

// of returns id's name.
func (m names) of(id string) string {
	if len(m) == 0 || id == "" {
		return id // nothing of the kind renamed, or no id (never given a name): no lookup
	}
	if n, ok := m[id]; ok {
		return n
	}
	return id
}

// of returns the renaming of one kind of id.
func (r *renamer) of(k idKind) names { return r.rename[k] }

// any returns the renaming of an id of any kind, Work ids first, then
// runs, calls and sends: for callers that hold ids from outside the trace.
func (r *renamer) any() func(string) string {
	rename := r.rename
	if rename[runID] == nil && rename[workID] == nil && rename[callID] == nil && rename[sendID] == nil {
		return unchanged // nothing renamed: a simulation's ids
	}
	return func(s string) string {
		for _, k := range [...]idKind{workID, runID, callID, sendID} {
			if n, ok := rename[k][s]; ok {
				return n
			}
		}
		return s
	}
}

// unchanged is the renaming of a trace that renames nothing.
func unchanged(s string) string { return s }

// fixDetail renames the run and Work ids in a harness entry's detail, which
// the harness writes as words (a platform event's "session-1
// delegation.start child=session-2", a note's "crash loses w-1"): only a
// whole word that is an id is renamed, and nothing inside double quotes,
// where a harness quotes content (a goal, a model's text).
//
// A platform event's detail starts with its entry's run (raw, named
// name): a first word that is raw is given name without a lookup, unless
// a Work is named so (a Work's name comes before a run's); rawWord says
// raw is a word whole (isWord), read once for a run's entries.
func fixDetail(d, raw, name string, rawWord bool, run, work names, words *idWords, out *slab.Texts) string {
	if len(d) < words.minLen || words.maxLen == 0 {
		return d // no id to rename, or too short to hold one
	}
	var rw rewrite
	i := 0
	if rawWord && len(d) >= len(raw) && d[:len(raw)] == raw &&
		(len(d) == len(raw) || wordEnd(d, len(raw)) == len(raw)) && work.of(raw) == raw {
		if name != raw {
			rw.replace(out, d, 0, len(raw), name)
		}
		i = len(raw)
	}
	if words.prefix != "" {
		fixDetailAt(&rw, d, i, run, work, words, out)
	} else {
		fixDetailByWord(&rw, d, i, run, work, words, out)
	}
	return rw.end(out, d)
}

// fixDetailByWord is fixDetail reading the detail word by word from i.
func fixDetailByWord(rw *rewrite, d string, i int, run, work names, words *idWords, out *slab.Texts) {
	for i < len(d) {
		switch detailBytes[d[i]] {
		case quote:
			i = pastQuoted(d, i)
			continue
		case between:
			i++
			continue
		case colon:
			if i+1 == len(d) || d[i+1] == ' ' {
				i++
				continue
			}
		}
		// A word starts at i.
		from := i
		i = wordEnd(d, i+1)
		if n, ok := words.renamed(d[from:i], run, work); ok {
			rw.replace(out, d, from, i, n)
		}
	}
}

// fixDetailAt is fixDetailByWord for ids that share a prefix (a platform's
// sessions are session-n): it reads only the words that start with it,
// found by a search for it, outside the quoted text found by a search for
// quotes, as the word-by-word reading would find them.
func fixDetailAt(rw *rewrite, d string, i int, run, work names, words *idWords, out *slab.Texts) {
	p := words.prefix
	at := -1 // the next place the prefix stands at or after i, once found
	for i < len(d) {
		if at < i {
			k := strings.Index(d[i:], p)
			if k < 0 {
				break
			}
			at = i + k
		}
		if q := strings.IndexByte(d[i:at], '"'); q >= 0 {
			i = pastQuoted(d, i+q)
			continue
		}
		// The prefix stands outside quotes; a word starts there unless a
		// byte of a word comes before it (the prefix's bytes are all a
		// word's, so no colon that ends a word can: a space would follow
		// it).
		if at > 0 {
			if k := detailBytes[d[at-1]]; k != between && k != quote {
				i = at + 1
				continue
			}
		}
		from := at
		i = wordEnd(d, at+len(p))
		if n, ok := words.renamed(d[from:i], run, work); ok {
			rw.replace(out, d, from, i, n)
		}
	}
}

// rewrite writes a detail d with some of its words replaced into out,
// once the first is.
type rewrite struct {
	// b is d as rewritten so far, once changed. (out is a parameter of
	// each call, not a field beside b: one field's bytes going to the
	// heap would take the other's pointer, and a normalization's state
	// with it.)
	b       []byte
	last    int // the end of the last word replaced
	changed bool
}

// replace replaces d[from:to] with n.
func (rw *rewrite) replace(out *slab.Texts, d string, from, to int, n string) {
	if !rw.changed {
		rw.b = out.Open(len(d) + 16)
		rw.changed = true
	}
	rw.b = append(append(rw.b, d[rw.last:from]...), n...)
	rw.last = to
}

// end returns d as rewritten: d itself when nothing was.
func (rw *rewrite) end(out *slab.Texts, d string) string {
	if !rw.changed {
		return d
	}
	return out.Close(append(rw.b, d[rw.last:]...))
}

// wordEnd returns the end of the word of d that runs up to i at least: the
// next separator, quote, or colon that a space or the end follows.
func wordEnd(d string, i int) int {
	for ; i < len(d); i++ {
		if k := detailBytes[d[i]]; k != inWord && (k != colon || i+1 == len(d) || d[i+1] == ' ') {
			break
		}
	}
	return i
}

// pastQuoted returns the index past the double-quoted string that starts
// at d[i], or len(d) if it is not closed.
func pastQuoted(d string, i int) int {
	if q := closingQuote(d, i); q >= 0 {
		return q + 1
	}
	return len(d)
}

// closingQuote returns the index of the double quote that closes the
// string that starts at s[i], escapes and all (a quote after an odd run of
// backslashes is escaped), or -1 if it is not closed: what reading the
// string escape by escape finds, a search for quotes at a time.
func closingQuote(s string, i int) int {
	for j := i + 1; ; {
		q := strings.IndexByte(s[j:], '"')
		if q < 0 {
			return -1
		}
		q += j
		k := q
		for k > j && s[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 {
			return q
		}
		j = q + 1
	}
}

// What a byte of a detail is to its words: part of one, a separator
// between them, a quote (quoted text has no words), or a colon, which ends
// a word where a space or the end follows it.
const (
	inWord = iota
	between
	quote
	colon
)

var detailBytes = func() (c [256]uint8) {
	for _, b := range []byte(" =,;()[]") {
		c[b] = between
	}
	c['"'], c[':'] = quote, colon
	return c
}()

// idWords tells at a glance most words that are no id to rename: the ids
// renamed start and end with a few bytes and have a few lengths (a
// platform's "session-12" and "schedule-1" start alike, "session.created"
// ends otherwise).
type idWords struct {
	first, last    [256]bool
	minLen, maxLen int
	// prefix is the ids' longest common prefix up to its first byte that
	// is not a word's, if any: a detail's words that may be ids are found
	// by a search for it.
	prefix string
	// seen holds the last words looked up, by their length and last two
	// bytes, and their names: a platform's events name the same few
	// sessions one after another.
	seen [64]struct{ word, name string }
}

// idWords returns the scan's idWords for the ids of run and work.
func (sc *jsonScan) idWords(run, work names) *idWords {
	w := &sc.words
	*w = idWords{}
	w.add(run)
	w.add(work)
	sc.wordsUsed = true
	return w
}

// name returns word's name, a Work's before a run's, or word itself.
func (w *idWords) name(word string, run, work names) string {
	l := uint(len(word))
	h := &w.seen[(l*7+uint(word[l-1])*3+uint(word[max(l, 2)-2]))%uint(len(w.seen))]
	if h.word == word {
		return h.name
	}
	n := work.of(word)
	if n == word {
		n = run.of(word)
	}
	h.word, h.name = word, n
	return n
}

func (w *idWords) add(m names) {
	for id := range m {
		if id == "" {
			continue
		}
		if w.maxLen == 0 {
			w.minLen = len(id)
			w.prefix = id
			for i := range len(id) {
				if detailBytes[id[i]] != inWord {
					w.prefix = id[:i]
					break
				}
			}
		}
		w.prefix = commonPrefix(w.prefix, id)
		w.first[id[0]], w.last[id[len(id)-1]] = true, true
		w.minLen, w.maxLen = min(w.minLen, len(id)), max(w.maxLen, len(id))
	}
}

// isWord reports whether s is a word whole: one that starts a detail
// ends where s does, if a separator, a quote or the end follows it.
func isWord(s string) bool {
	return s != "" && detailBytes[s[0]] == inWord && wordEnd(s, 1) == len(s)
}

// may reports whether word may be an id to rename.
func (w *idWords) may(word string) bool {
	return len(word) >= w.minLen && len(word) <= w.maxLen && len(word) > 0 && w.first[word[0]] && w.last[word[len(word)-1]]
}

// renamed returns word's name and true when word is an id that is renamed.
func (w *idWords) renamed(word string, run, work names) (string, bool) {
	if !w.may(word) {
		return "", false
	}
	n := w.name(word, run, work)
	return n, n != word
}

// commonPrefix returns the longest prefix of a that b starts with.
func commonPrefix(a, b string) string {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return a[:i]
		}
	}
	return a[:n]
}

// fixRow renames the id a status row starts with ("- w-1 · research ·
// running 4s"); the rest of the row is the label and state, which stay.
func fixRow(row string, id names, out *slab.Texts) string {
	const lead, sep = "- ", " · "
	if !strings.HasPrefix(row, lead) {
		return row
	}
	end := strings.Index(row[len(lead):], sep)
	if end < 0 {
		return row
	}
	raw := row[len(lead) : len(lead)+end]
	if n := id.of(raw); n != raw {
		b := append(append(out.Open(len(row)-len(raw)+len(n)), lead...), n...)
		return out.Close(append(b, row[len(lead)+end:]...))
	}
	return row
}

// workArgs fixes the arguments of a call: a work call's ids, and the
// platform's id keys of any call.
func workArgs(c *core.ToolCall, js *jsonFixer) string {
	return js.fix(c.Arguments, c.Name == core.WorkToolName)
}

// jsonFixer renames ids and rewrites times inside a tool's JSON answer (or
// a work call's arguments), by structure: a Work or send id only as the
// value of "id" or "workId" in an object shaped as a work.ref, a status
// projection, a receipt or a work call's arguments, with its timestamps
// ("createdAt", …), in the work tool's documents; a session's run id only
// as the whole value of a platform tool's or event's "worker_id",
// "session_id" or "overwrote", and a time as the whole value of its
// "next_run". Everything else in the document stays byte for
// byte: a value that merely contains an id, or sits at another key, is
// content.
type jsonFixer struct {
	run, work, send names
	stamps          offsets
	// renames: some run, Work or send id is renamed (a simulation's ids
	// are already normal, and then only timestamps need a document read).
	renames bool
	// scan is reused from document to document of one normalization, and
	// from one normalization to the next.
	scan *jsonScan
	// out holds the documents, details and rows the normalization
	// rewrote, and the names given.
	out slab.Texts
	// msgs, calls and rows hold the copies of the messages, calls and
	// status rows changed, a few allocations for a normalization rather
	// than one a slice.
	msgs  slab.Slab[core.Message]
	calls slab.Slab[core.ToolCall]
	rows  slab.Slab[string]
	// seen holds the last documents read, filtered out or fixed, and what
	// they became, by their length: a tool's answer comes again as a
	// message of its caller's next request, and a call's arguments in its
	// call's entry and in the next request's assistant message, with other
	// runs' entries between them.
	seen [8]fixedDoc
}

// fixedDoc is a document fix read (in, as the work tool's or not) and
// what it became.
type fixedDoc struct {
	in, out string
	work    bool
}

// scans are the scans of normalizations done.
var scans = sync.Pool{New: func() any { return new(jsonScan) }}

// done gives the fixer's scan back for another normalization.
func (f *jsonFixer) done() {
	sc := f.scan
	f.scan = nil
	sc.s = ""
	clear(sc.pending[:cap(sc.pending)])
	clear(sc.edits[:cap(sc.edits)])
	sc.frames, sc.pending, sc.edits = sc.frames[:0], sc.pending[:0], sc.edits[:0]
	if sc.wordsUsed {
		sc.words, sc.wordsUsed = idWords{}, false // nothing of the trace is kept
	}
	scans.Put(sc)
}

// jsonEdit replaces src[from:to] with text, quoted when quote is set.
type jsonEdit struct {
	from, to int
	text     string
	quote    bool
}

// jsonFrame is an open object or array of the document being fixed.
type jsonFrame struct {
	object  bool
	wantKey bool
	key     string // the key whose value comes next, in an object
	shaped  bool   // the object is one whose ids and times are known
	workID  bool   // the object has a workId: its id is a send receipt's
	pending int    // where its edits start in the scan's pending edits
}

// jsonScan is the state of one fix: the open frames, the edits that wait
// for their object's shape, and the edits to make. It scans the document by
// hand (a document is valid JSON, or it is left alone): the fix runs on
// every tool answer of every simulated run. What is not JSON after all is
// left alone.
type jsonScan struct {
	s       string
	work    bool
	frames  []jsonFrame
	pending []jsonEdit
	edits   []jsonEdit
	// words are the ids details may name, for a normalization that
	// renames some (wordsUsed).
	words     idWords
	wordsUsed bool
}

// fix fixes a JSON document; work says it is the work tool's (its
// arguments or answer, or a work.ref), whose id keys count.
func (f *jsonFixer) fix(s string, work bool) string {
	if len(s) == 0 || (s[0] != '{' && s[0] != '[') {
		return s
	}
	// The same document is mostly the same string: its bytes compare at
	// once.
	seen := &f.seen[len(s)%len(f.seen)]
	if len(seen.in) == len(s) && seen.work == work && seen.in == s {
		return seen.out
	}
	out := s
	if (work || mayHoldPlatformKey(s)) && (f.renames || mayHoldTimestamp(s)) {
		out = f.fixDoc(s, work)
	}
	*seen = fixedDoc{in: s, out: out, work: work}
	return out
}

func (f *jsonFixer) fixDoc(s string, work bool) string {
	sc := f.scan
	sc.s, sc.work = s, work
	sc.frames, sc.pending, sc.edits = sc.frames[:0], sc.pending[:0], sc.edits[:0]
	if !f.scanDoc() || len(sc.frames) != 0 || len(sc.edits) == 0 {
		return s
	}
	slices.SortFunc(sc.edits, func(a, b jsonEdit) int { return cmp.Compare(a.from, b.from) })
	n := len(s)
	for _, e := range sc.edits {
		n += len(e.text) + 2 - (e.to - e.from)
	}
	b := f.out.Open(n)
	last := 0
	for _, e := range sc.edits {
		b = append(b, s[last:e.from]...)
		if e.quote {
			b = append(append(append(b, '"'), e.text...), '"')
		} else {
			b = append(b, e.text...)
		}
		last = e.to
	}
	return f.out.Close(append(b, s[last:]...))
}

// jsonString renders s as a JSON string: ids and offsets need no escapes,
// and are written as they are between quotes (plain); anything else goes
// through encoding/json.
func jsonString(s string) (text string, plain bool) {
	if !jsonenc.Plain(s) {
		q, _ := json.Marshal(s)
		return string(q), false
	}
	return s, true
}

// mayHoldPlatformKey is a fast filter for a document that is not the work
// tool's, of which only the platform's keys are read (see value): one of
// them written plainly, or some string written with escapes, which the
// scan reads for what it says.
func mayHoldPlatformKey(s string) bool {
	if strings.IndexByte(s, '\\') >= 0 {
		return true
	}
	// One pass over the quotes: a key is written plainly where a quote is
	// followed by the key and a quote.
	for i := 0; ; {
		j := strings.IndexByte(s[i:], '"')
		if j < 0 {
			return false
		}
		i += j + 1
		if i < len(s) && platformKeyStarts[s[i]] {
			for _, k := range platformKeys {
				if strings.HasPrefix(s[i-1:], k) {
					return true
				}
			}
		}
	}
}

// The platform's keys fix reads in any document: the first three hold a
// session's run id, the last a time.
const (
	keyWorkerID  = "worker_id"
	keySessionID = "session_id"
	keyOverwrote = "overwrote"
	keyNextRun   = "next_run"
)

// platformKeys are the platform's keys as a document writes them plainly.
var platformKeys = [...]string{`"` + keyWorkerID + `"`, `"` + keySessionID + `"`, `"` + keyOverwrote + `"`, `"` + keyNextRun + `"`}

// platformKeyStarts holds the first byte of each of the platform's keys.
var platformKeyStarts = func() (c [256]bool) {
	for _, k := range platformKeys {
		c[k[1]] = true
	}
	return c
}()

// jsonDelims are the bytes that end a number, true, false or null.
var jsonDelims = func() (c [256]bool) {
	for _, b := range []byte(" \t\n\r,:]}[{\"") {
		c[b] = true
	}
	return c
}()

func (f *jsonFixer) scanDoc() bool {
	sc := f.scan
	s := sc.s
	for i := 0; i < len(s); {
		switch c := s[i]; c {
		case ' ', '\t', '\n', '\r', ':':
			i++
		case ',':
			if n := len(sc.frames); n > 0 && sc.frames[n-1].object {
				sc.frames[n-1].wantKey = true
			}
			i++
		case '{', '[':
			sc.frames = append(sc.frames, jsonFrame{object: c == '{', wantKey: c == '{', pending: len(sc.pending)})
			i++
		case '}', ']':
			if len(sc.frames) == 0 || sc.frames[len(sc.frames)-1].object != (c == '}') {
				return false
			}
			top := sc.frames[len(sc.frames)-1]
			sc.frames = sc.frames[:len(sc.frames)-1]
			if top.shaped {
				sc.edits = append(sc.edits, sc.pending[top.pending:]...)
			}
			sc.pending = sc.pending[:top.pending]
			// The container is a value of its parent's, and no true: it
			// shapes nothing.
			i++
		case '"':
			// The closing quote, at once where no backslash stands
			// before it.
			q := strings.IndexByte(s[i+1:], '"')
			if q < 0 {
				return false
			}
			if q += i + 1; s[q-1] == '\\' {
				if q = closingQuote(s, i); q < 0 {
					return false
				}
			}
			j, str := q+1, s[i+1:q]
			i = j
			n := len(sc.frames)
			if n == 0 || !sc.frames[n-1].object {
				continue // an array's value, or the document: no key holds it
			}
			top := &sc.frames[n-1]
			// A string written with escapes is decoded only where its text
			// counts: as a key, or as a "kind" (a value so written is never
			// rewritten). Content is full of escapes, and decoding it all
			// would allocate for strings with nothing to rename.
			if top.wantKey {
				if strings.IndexByte(str, '\\') >= 0 {
					str = decoded(s[q-len(str)-1 : j])
				}
				top.key, top.wantKey = str, false
				continue
			}
			if top.key == "kind" && strings.IndexByte(str, '\\') >= 0 {
				str = decoded(s[q-len(str)-1 : j])
			}
			f.value(top, j, str)
		default: // a number, true, false or null
			j := i
			for j < len(s) && !jsonDelims[s[j]] {
				j++
			}
			if j == i {
				return false
			}
			// Only a true at "detached" counts: it shapes its object.
			if n := len(sc.frames); n > 0 && sc.frames[n-1].object && sc.frames[n-1].key == "detached" && s[i:j] == "true" {
				sc.frames[n-1].shaped = true
			}
			i = j
		}
	}
	return true
}

// decoded is the text of the JSON string q (quotes and all).
func decoded(q string) string {
	var u string
	_ = json.Unmarshal([]byte(q), &u)
	return u
}

// value accounts for the string value str of the object top, which ends
// at end.
func (f *jsonFixer) value(top *jsonFrame, end int, str string) {
	sc := f.scan
	key := top.key
	switch key {
	case keyWorkerID, keySessionID, keyOverwrote:
		sc.edit(top, end, str, f.run.of(str), true)
		return
	case keyNextRun:
		if off, ok := f.stamps.offset(str, &f.out); ok {
			sc.edit(top, end, str, off, true)
		}
		return
	case "kind":
		top.shaped = top.shaped || str == core.WorkRefKind
		return
	case "action", "workId", "targetLabel":
		top.shaped = true
	}
	if !sc.work {
		return
	}
	switch key {
	case "id", "workId":
		rename := f.work
		if key == "id" && top.workID {
			rename = f.send
		}
		top.workID = top.workID || key == "workId"
		sc.edit(top, end, str, rename.of(str), false)
	case "createdAt", "startedAt", "finishedAt", "acceptedAt":
		if off, ok := f.stamps.offset(str, &f.out); ok {
			sc.edit(top, end, str, off, false)
		}
	}
}

// edit plans replacing the string value str, which ends at end, with repl:
// at once (always), or when its object turns out to be shaped. A value
// written with escapes is left as it is.
func (sc *jsonScan) edit(top *jsonFrame, end int, str, repl string, always bool) {
	if repl == str || strings.IndexByte(str, '\\') >= 0 {
		return
	}
	text, quote := jsonString(repl)
	e := jsonEdit{from: end - len(str) - 2, to: end, text: text, quote: quote}
	if always {
		sc.edits = append(sc.edits, e)
	} else {
		sc.pending = append(sc.pending, e)
	}
}

// fixRows renames the Work id of every status row, copying the slice only
// if one changes.
func fixRows(rows []string, work names, js *jsonFixer) []string {
	var out []string
	for i, row := range rows {
		f := fixRow(row, work, &js.out)
		if out == nil && f != row {
			out = clone(&js.rows, rows)
		}
		if out != nil {
			out[i] = f
		}
	}
	if out == nil {
		return rows
	}
	return out
}

func fixMessages(ms []core.Message, id names, js *jsonFixer) []core.Message {
	var out []core.Message
	for i := range ms {
		m := &ms[i]
		content := m.Content
		switch {
		case m.Role == core.RoleTool:
			content = js.fix(content, m.ToolName == core.WorkToolName || strings.Contains(content, core.WorkRefKind))
		case m.Role == core.RoleUser:
			content = js.fix(content, false) // a platform event the platform wakes a session with
		}
		callID, calls := id.of(m.ToolCallID), fixCalls(m.ToolCalls, id, js)
		if out == nil && (content != m.Content || callID != m.ToolCallID || !sameSlice(calls, m.ToolCalls)) {
			out = clone(&js.msgs, ms)
		}
		if out != nil {
			out[i].Content, out[i].ToolCallID, out[i].ToolCalls = content, callID, calls
		}
	}
	if out == nil {
		return ms
	}
	return out
}

func fixCalls(calls []core.ToolCall, id names, js *jsonFixer) []core.ToolCall {
	var out []core.ToolCall
	for i := range calls {
		c := &calls[i]
		cid, args := id.of(c.ID), workArgs(c, js)
		if out == nil && (cid != c.ID || args != c.Arguments) {
			out = clone(&js.calls, calls)
		}
		if out != nil {
			out[i].ID, out[i].Arguments = cid, args
		}
	}
	if out == nil {
		return calls
	}
	return out
}

// clone returns a copy of s taken from sl, with no room to grow.
func clone[T any](sl *slab.Slab[T], s []T) []T {
	c := sl.Take(len(s))
	copy(c, s)
	return c
}

// maxTexts is the room of the largest chunk of the strings a
// normalization writes: a platform's week rewrites thousands.
const maxTexts = 32 << 10

// sameSlice reports whether two slices are the same slice (not merely
// equal): fixCalls returns its argument when nothing changed.
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// replaceTimestamps rewrites every RFC 3339 timestamp in s (see
// timestampLen) as an offset from start, and returns s itself when there is
// none. It scans by hand rather than with a regexp: it is on the path of
// every simulated run, and a timestamp has its 'T' at a fixed place, ten
// bytes from its start.
func replaceTimestamps(s string, start time.Time) string {
	return (&offsets{start: start}).replace(s)
}

// offsets rewrites timestamps as offsets from start, remembering the last
// one it rewrote: the timestamps of a run's projections and receipts are
// mostly the same few instants.
type offsets struct {
	start    time.Time
	ts, last string
}

// offset returns ts as an offset from the start, written into out when
// out is not nil.
func (o *offsets) offset(ts string, out *slab.Texts) (string, bool) {
	if ts == o.ts && ts != "" {
		return o.last, true
	}
	at, err := parseTimestamp(ts)
	if err != nil {
		return "", false
	}
	o.ts = ts
	if d := at.Sub(o.start); d > 0 && out != nil {
		// Offset's "+" and the duration, in one string of out's.
		text := d.String()
		o.last = out.Join("+", text)
	} else {
		o.last = Offset(d)
	}
	return o.last, true
}

func (o *offsets) replace(s string) string {
	var b strings.Builder
	last := 0     // end of the last timestamp replaced
	consumed := 0 // end of the last match, replaced or not
	for j := 10; j < len(s); j++ {
		k := strings.IndexByte(s[j:], 'T')
		if k < 0 {
			break
		}
		if j += k; j-10 < consumed {
			continue
		}
		i := j - 10
		n := timestampLen(s, i)
		if n == 0 {
			continue
		}
		// An unparsable match stays as it is, and the scan goes on after
		// it, as a regexp replacement would.
		consumed, j = i+n, i+n-1
		if off, ok := o.offset(s[i:i+n], nil); ok {
			if b.Len() == 0 {
				b.Grow(len(s))
			}
			b.WriteString(s[last:i])
			b.WriteString(off)
			last = i + n
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// parseTimestamp is time.Parse(time.RFC3339Nano, ts), for any ts (a
// document's nextRun or createdAt may hold anything). The runtime writes
// UTC with milliseconds (2026-01-01T00:00:05.000Z), the platform's
// next_run UTC in seconds (2026-01-01T01:00:00Z), and those forms are read
// directly (readUTC); any other goes to time.Parse, to read or refuse.
func parseTimestamp(ts string) (time.Time, error) {
	if secs, ns, ok := readUTC(ts); ok {
		return time.Unix(secs, ns).UTC(), nil
	}
	return time.Parse(time.RFC3339Nano, ts)
}

// readUTC reads ts in the runtime's or the platform's form, as Unix
// seconds and nanoseconds, its digits two at a time where the form has
// them: a date whose fields are in range (the ones time.Date keeps as
// they are) is that instant; any other is not read (ok is false).
func readUTC(ts string) (secs, ns int64, ok bool) {
	if !(len(ts) == 24 && ts[19] == '.' && ts[23] == 'Z' || len(ts) == 20 && ts[19] == 'Z') {
		return 0, 0, false
	}
	_ = ts[19] // the form's bytes up to its seconds, read without a check each
	if ts[4] != '-' || ts[7] != '-' || ts[10] != 'T' || ts[13] != ':' || ts[16] != ':' {
		return 0, 0, false
	}
	c, yy, mo, d := twoDigits(ts, 0), twoDigits(ts, 2), twoDigits(ts, 5), twoDigits(ts, 8)
	h, mi, sec := twoDigits(ts, 11), twoDigits(ts, 14), twoDigits(ts, 17)
	ms := 0
	if len(ts) == 24 {
		ms = twoDigits(ts, 20)*10 + int(ts[22]) - '0'
		if ms < 0 || uint(ts[22]-'0') > 9 {
			return 0, 0, false
		}
	}
	y := c*100 + yy
	if c|yy|mo|d|h|mi|sec < 0 || mo < 1 || mo > 12 || d < 1 || d > daysIn(time.Month(mo), y) || h > 23 || mi > 59 || sec > 59 {
		return 0, 0, false
	}
	return int64(daysFromCivil(y, mo, d))*86400 + int64(h*3600+mi*60+sec), int64(ms) * int64(time.Millisecond), true
}

// twoDigits is the number the two digits at s[i:] spell, or -1 if either
// byte is no digit.
func twoDigits(s string, i int) int {
	a, b := int(s[i])-'0', int(s[i+1])-'0'
	if uint(a) > 9 || uint(b) > 9 {
		return -1
	}
	return a*10 + b
}

// daysFromCivil is the number of days from 1970-01-01 to the date y-m-d
// of the proleptic Gregorian calendar (m 1-12, d in range), counted in
// eras of 400 years from a year that starts in March.
func daysFromCivil(y, m, d int) int {
	if m <= 2 {
		y--
	}
	era := y
	if era < 0 {
		era -= 399
	}
	era /= 400
	yoe := y - era*400                  // [0, 399]
	doy := (153*((m+9)%12)+2)/5 + d - 1 // [0, 365]
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// daysIn is the number of days of month m of year y.
func daysIn(m time.Month, y int) int {
	switch m {
	case time.February:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case time.April, time.June, time.September, time.November:
		return 30
	}
	return 31
}

// timestampLen returns the length of the timestamp at s[i:], or 0: the
// regexp \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d).
func timestampLen(s string, i int) int {
	const layout = "dddd-dd-ddTdd:dd:dd"
	if len(s)-i < len(layout)+1 {
		return 0
	}
	for k := 0; k < len(layout); k++ {
		c := s[i+k]
		if layout[k] == 'd' {
			if !isDigit(c) {
				return 0
			}
		} else if c != layout[k] {
			return 0
		}
	}
	p := i + len(layout)
	if s[p] == '.' && p+1 < len(s) && isDigit(s[p+1]) {
		p += 2
		for p < len(s) && isDigit(s[p]) {
			p++
		}
	}
	switch {
	case p < len(s) && s[p] == 'Z':
		return p + 1 - i
	case p+6 <= len(s) && (s[p] == '+' || s[p] == '-') && isDigit(s[p+1]) && isDigit(s[p+2]) && s[p+3] == ':' && isDigit(s[p+4]) && isDigit(s[p+5]):
		return p + 6 - i
	}
	return 0
}

// mayHoldTimestamp is a fast filter for raw JSON: an RFC 3339 time has a
// 'T' between a digit and a digit with a '-' three places before it.
func mayHoldTimestamp(s string) bool {
	for i := 10; i+1 < len(s); i++ {
		// Jump to the next 'T' (a vectorized search): most documents have
		// few.
		k := strings.IndexByte(s[i:len(s)-1], 'T')
		if k < 0 {
			return false
		}
		if i += k; s[i-3] == '-' && isDigit(s[i-1]) && isDigit(s[i+1]) {
			return true
		}
	}
	return false
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// Offset renders a duration from the start as +5s, +1m30s or +250ms.
func Offset(d time.Duration) string {
	if d < 0 {
		// Not "-" + Offset(-d): -d overflows for the most negative
		// duration (a timestamp centuries before the start).
		return d.String()
	}
	if d == 0 {
		return "+0s"
	}
	return "+" + d.String()
}
