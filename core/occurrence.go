package core

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"github.com/crux-sim/crux-sim/internal/jsonenc"
)

// occurrences are the identities of the child calls a run has made at its
// current provider step, and what each produced. A child call, background
// or foreground, is identified by (owner, turn, tool-call id, tool key):
// the owner and the turn are the run and its step, so a repeated identity
// can only come from the same step (a provider response that repeats a
// call), and the record need live only as long as the step. The same
// identity with the same input replays the first call's outcome (the
// existing work.ref, or the foreground child's exact output) and runs
// nothing; with other input it is a conflict.
type occurrences struct {
	step  int
	calls []occurrence
}

type occurrence struct {
	callID, tool string
	digest       [sha256.Size]byte
	background   bool
	ref          WorkRef // background
	content      string  // foreground: the tool content, or
	err          error   // the model-facing error it ended with
}

// seen returns the record of an identity at the step, nil for a new one,
// or a conflict error.
func (o *occurrences) seen(step int, callID, tool string, digest [sha256.Size]byte, background bool) (*occurrence, error) {
	if o.step != step {
		o.step, o.calls = step, o.calls[:0]
	}
	for i := range o.calls {
		occ := &o.calls[i]
		if occ.callID != callID || occ.tool != tool {
			continue
		}
		if occ.digest != digest {
			what := "ran " + tool + " in the foreground"
			if occ.background {
				what = "started background work " + occ.ref.ID
			}
			return nil, errConflict.with(fmt.Sprintf("tool call %s already %s with different input", callID, what))
		}
		if occ.background != background {
			return nil, errConflict.with(fmt.Sprintf(
				"tool call %s already called %s with the same input but run_in_background %t", callID, tool, !background))
		}
		return occ, nil
	}
	return nil, nil
}

// record remembers what a new identity produced at the current step.
func (o *occurrences) record(occ occurrence) { o.calls = append(o.calls, occ) }

// inputDigest is the digest of a child call's input that its occurrence
// identity keeps: of its canonical JSON encoding.
func inputDigest(input any) [sha256.Size]byte {
	var scratch [512]byte // the canonical input is only hashed
	canon, ok := jsonenc.Append(scratch[:0], input)
	if !ok {
		canon, _ = json.Marshal(input)
	}
	return sha256.Sum256(canon)
}
