package cassette

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"slices"

	"github.com/crux-sim/crux-sim/core"
)

// A run's requests repeat its whole history: request n carries every
// message of request n-1 and a few more. A cassette that wrote each
// request whole would grow with the square of the run's length, and so
// would reading and replaying it. So the file stores, per request, only
// what is new since the same run's previous request, and the writer, the
// reader and the replayer all follow each run with a runState.

// runState follows the requests of one run, in order, and tells what each
// adds to the one before.
type runState struct {
	started bool
	msgs    []core.Message
	model   string
	system  string
	tools   []core.ToolSpec
	output  *core.Schema
}

// advance takes the run's next request. It returns how many leading
// messages the request shares with the previous one (0 for the first) and
// whether its setup (model, system text, tools, output schema) is the
// previous one's.
func (s *runState) advance(req *core.Request) (prior int, sameSetup bool) {
	if s.started {
		prior = sharedPrefix(s.msgs, req.Messages)
		sameSetup = req.Model == s.model && req.System == s.system && sameTools(s.tools, req.Tools) && sameSchema(s.output, req.Output)
	}
	s.started = true
	s.msgs, s.model, s.system, s.tools, s.output = req.Messages, req.Model, req.System, req.Tools, req.Output
	return prior, sameSetup
}

// sharedPrefix counts the leading messages cur has in common with prev.
//
// The runtime only ever appends to a run's history and hands each request
// a capped slice of it, so a request whose messages start at the same
// array as the previous request's holds all of them unchanged: that is
// answered at once, which keeps recording, reading and replaying linear in
// the run's length. Any other slice (a middleware that rebuilt the
// history) is compared message by message.
func sharedPrefix(prev, cur []core.Message) int {
	if len(prev) <= len(cur) && (len(prev) == 0 || &prev[0] == &cur[0]) {
		return len(prev)
	}
	n := 0
	for n < len(prev) && n < len(cur) && sameMessage(prev[n], cur[n]) {
		n++
	}
	return n
}

func sameMessage(a, b core.Message) bool {
	return a.Role == b.Role && a.Content == b.Content && a.ToolCallID == b.ToolCallID && a.ToolName == b.ToolName &&
		a.IsError == b.IsError && a.Guidance == b.Guidance && slices.Equal(a.ToolCalls, b.ToolCalls)
}

func sameTools(a, b []core.ToolSpec) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Description != b[i].Description || !bytes.Equal(a[i].Parameters, b[i].Parameters) {
			return false
		}
	}
	return true
}

func sameSchema(a, b *core.Schema) bool {
	if a == b {
		return true
	}
	return a != nil && b != nil && bytes.Equal(a.JSON(), b.JSON())
}

// digester computes the digest of each request of one run, hashing every
// message once.
//
// The digest of a request is "sha256:" and the hex SHA-256 of three lines:
// the hex SHA-256 of its messages (each encoded as in a cassette's
// messages array and followed by a newline), its setup ({model, system,
// tools, output}, keys absent when empty) and its status block (or null).
// Every line ends in a newline.
type digester struct {
	h hash.Hash // over the encoded messages msgs[:n]
	n int
}

// digest returns the request's digest. msgs are the request's messages in
// cassette form, encoded by enc on demand; prior of them were hashed for
// the run's previous request. setup and status are encoded already.
func (d *digester) digest(prior int, n int, encMsg func(i int) []byte, setup, status []byte) string {
	if d.h == nil || prior < d.n {
		// The first request, or a history that was rewritten: hash the
		// kept prefix again.
		d.h, d.n = sha256.New(), 0
	}
	for i := d.n; i < n; i++ {
		d.h.Write(encMsg(i))
		d.h.Write(newline)
	}
	d.n = n
	var sum [sha256.Size]byte
	outer := sha256.New()
	outer.Write([]byte(hex.EncodeToString(d.h.Sum(sum[:0]))))
	outer.Write(newline)
	outer.Write(setup)
	outer.Write(newline)
	outer.Write(status)
	outer.Write(newline)
	return "sha256:" + hex.EncodeToString(outer.Sum(sum[:0]))
}

var newline = []byte{'\n'}

// Digest is "sha256:" and the hex SHA-256 of b: the form of a header's
// scenarioDigest.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
