package core

import (
	"time"

	"github.com/crux-sim/crux-sim/core/lifecycle"
)

// WorkState is a Work lifecycle state; see package lifecycle.
type WorkState = lifecycle.State

// WorkRef is the immutable reference a background call returns. It is a
// value: the copy a caller holds cannot change the registry's.
type WorkRef struct {
	Kind       string     `json:"kind"`
	ID         string     `json:"id"`
	TargetID   string     `json:"targetId"`
	Guarantees Guarantees `json:"guarantees"`
}

// Guarantees states how far Work is carried: both only within this process.
type Guarantees struct {
	Execution string `json:"execution"`
	Rejoin    string `json:"rejoin"`
}

// WorkRefKind is WorkRef.Kind.
const WorkRefKind = "work.ref"

// ProcessLocal is the only guarantee the runtime gives.
const ProcessLocal = "process-local"

func newRef(id, target string) WorkRef {
	return WorkRef{Kind: WorkRefKind, ID: id, TargetID: target,
		Guarantees: Guarantees{Execution: ProcessLocal, Rejoin: ProcessLocal}}
}

// WorkStatus is the safe, result-free projection of Work that list, status
// and an unfinished result return. It never carries output or failure
// content.
type WorkStatus struct {
	Work            WorkRef   `json:"work"`
	TargetLabel     string    `json:"targetLabel"`
	State           WorkState `json:"state"`
	Attachment      string    `json:"attachment"`
	Attempt         int       `json:"attempt"`
	CreatedAt       string    `json:"createdAt"`
	StartedAt       string    `json:"startedAt,omitempty"`
	FinishedAt      string    `json:"finishedAt,omitempty"`
	ResultAvailable bool      `json:"resultAvailable"`
}

// CancelReceipt answers a cancel action.
type CancelReceipt struct {
	WorkID     string    `json:"workId"`
	Accepted   bool      `json:"accepted"`
	State      WorkState `json:"state"`
	AcceptedAt string    `json:"acceptedAt"`
}

// SendReceipt answers a send action.
type SendReceipt struct {
	WorkID     string `json:"workId"`
	ID         string `json:"id"`
	Cursor     string `json:"cursor"`
	AcceptedAt string `json:"acceptedAt"`
	Outcome    string `json:"outcome"`
}

// DetachReceipt answers a detach action.
type DetachReceipt struct {
	ID       string `json:"id"`
	Detached bool   `json:"detached"`
}

// NotFound is the whole answer to an id action on an unknown, foreign or
// detached id.
type NotFound struct {
	Status string `json:"status"`
}

var notFound = NotFound{Status: "not_found"}

// timestamp renders times as RFC 3339 in UTC with milliseconds, the ISO form
// the seed's TypeScript clients expect.
func timestamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	t = t.UTC()
	y, mo, d := t.Date()
	if y < 0 || y > 9999 {
		return t.Format(timestampLayout)
	}
	// Written by hand: projections and receipts carry several timestamps
	// each, and Format is a general interpreter of layouts.
	h, mi, sec := t.Clock()
	var b [24]byte
	digits := func(at, n, v int) {
		for i := at + n - 1; i >= at; i-- {
			b[i] = byte('0' + v%10)
			v /= 10
		}
	}
	digits(0, 4, y)
	b[4] = '-'
	digits(5, 2, int(mo))
	b[7] = '-'
	digits(8, 2, d)
	b[10] = 'T'
	digits(11, 2, h)
	b[13] = ':'
	digits(14, 2, mi)
	b[16] = ':'
	digits(17, 2, sec)
	b[19] = '.'
	digits(20, 3, t.Nanosecond()/int(time.Millisecond))
	b[23] = 'Z'
	return string(b[:])
}

const timestampLayout = "2006-01-02T15:04:05.000Z07:00"

// WorkInfo is the runtime's full view of a Work item, for harnesses and
// invariant checks. Unlike WorkStatus it says who owns the Work, whether it
// was detached or rejoined, and whether it failed; it still carries no child
// output or failure text.
type WorkInfo struct {
	Ref        WorkRef
	Owner      string
	Label      string
	Agent      bool
	State      WorkState
	Detached   bool
	Rejoined   bool
	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	Sent       int
	Delivered  int
}
