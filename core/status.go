package core

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unsafe"

	"github.com/crux-sim/crux-sim/core/lifecycle"
)

// Status context caps.
const (
	// MaxStatusRows is the most rows a status block carries.
	MaxStatusRows = 12
	// MaxLabelLen is the most characters of a target label or a Work id
	// in a row.
	MaxLabelLen = 96
	// StatusHeader opens every status block.
	StatusHeader = "Background work:"
)

// StatusBlock is the trailing, non-cacheable system block that tells a
// model about its Work at one provider request. It carries only ids, target
// labels, states, elapsed time and result availability.
type StatusBlock struct {
	// Text is the block as the model reads it.
	Text string `json:"text"`
	// Rows are the rows shown, in order.
	Rows []StatusRow `json:"rows"`
	// Omitted counts Work not shown because of the row cap.
	Omitted int `json:"omitted,omitempty"`
	// Cacheable is always false: providers must not cache this block.
	Cacheable bool `json:"cacheable"`
}

// StatusRow is one Work item in a status block.
type StatusRow struct {
	ID              string          `json:"id"`
	Label           string          `json:"label"`
	State           lifecycle.State `json:"state"`
	Elapsed         time.Duration   `json:"elapsed"`
	ResultAvailable bool            `json:"resultAvailable"`
}

// String renders the row, e.g. "- w-1 · research · completed 9s · Result available".
func (r StatusRow) String() string {
	b := r.appendTo(make([]byte, 0, r.size())) // one allocation for the whole row
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// size is the length of the row's text, for room to write it in.
func (r StatusRow) size() int {
	secs := int64(r.Elapsed / time.Second)
	n := len("- ") + len(r.ID) + len(" · ") + len(r.Label) + len(" · ") + len(r.State) + len(" ") + len("s")
	if secs < 0 {
		n++ // its sign
		secs = -secs
	}
	for n++; secs >= 10; secs /= 10 { // its digits
		n++
	}
	if r.ResultAvailable {
		n += len(" · Result available")
	}
	return n
}

// appendTo appends the row's text, which String returns, to b.
func (r StatusRow) appendTo(b []byte) []byte {
	b = append(append(b, "- "...), r.ID...)
	b = append(append(b, " · "...), r.Label...)
	b = append(append(b, " · "...), r.State...)
	b = strconv.AppendInt(append(b, ' '), int64(r.Elapsed/time.Second), 10)
	b = append(b, 's')
	if r.ResultAvailable {
		b = append(b, " · Result available"...)
	}
	return b
}

// fillStatus renders into blk the rows the registry sampled (one at
// least), in its order and within the cap, out of total attached items:
// the rest are counted as omitted (Omitted), which the text does not say,
// since the block holds nothing but rows. The text is written into room when it
// fits, room that the caller gives it for good and never writes to
// again (the block's own allocation), and into an allocation of its own
// otherwise. singleLine says that the rows' ids and labels are
// single-line already (their Work's, read once; see work.singleLine), so
// that SafeLabel would return them as they are.
func fillStatus(blk *StatusBlock, rows []StatusRow, total int, room []byte, singleLine bool) {
	if len(rows) > MaxStatusRows {
		rows = rows[:MaxStatusRows]
	}
	blk.Omitted = total - len(rows)
	size := len(StatusHeader)
	for i := range rows {
		if !singleLine {
			rows[i].ID = SafeLabel(rows[i].ID)
			rows[i].Label = SafeLabel(rows[i].Label)
		}
		size += 1 + rows[i].size()
	}
	blk.Rows = rows
	if size > len(room) {
		room = make([]byte, 0, size)
	}
	// Nothing writes to the bytes once they are the text (a text past
	// the room's end was appended to bytes of its own).
	b := appendStatus(room[:0], rows)
	blk.Text = unsafe.String(unsafe.SliceData(b), len(b))
}

// appendStatus appends a status block's text: the header and one line a
// row, nothing else (a count of the rows left out would be a line that is
// not a row).
func appendStatus(b []byte, rows []StatusRow) []byte {
	b = append(b, StatusHeader...)
	for i := range rows {
		b = rows[i].appendTo(append(b, '\n'))
	}
	return b
}

// SafeLabel makes a value fit on one line of a status row, as the row's
// target label and Work id must: each run of control characters and
// whitespace becomes one space (a line or paragraph separator and a bidi
// control count as control characters), the ends are trimmed, and a value over
// MaxLabelLen characters is cut to MaxLabelLen-1 characters plus "…".
func SafeLabel(s string) string {
	if singleLine(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	n, gap := 0, false
	for _, r := range s {
		if breaksLine(r) || unicode.IsSpace(r) {
			gap = n > 0
			continue
		}
		if gap {
			b.WriteByte(' ')
			n++
			gap = false
		}
		b.WriteRune(r)
		n++
	}
	out := b.String()
	if n <= MaxLabelLen {
		return out
	}
	cut, kept := 0, 0
	for i := range out {
		if kept == MaxLabelLen-1 {
			cut = i
			break
		}
		kept++
	}
	return out[:cut] + "…"
}

// singleLine reports, without allocating, that s needs no change: printable
// ASCII with no space at either end or beside another, at most MaxLabelLen
// long. Anything else takes the full path.
func singleLine(s string) bool {
	if len(s) > MaxLabelLen || s == "" {
		return s == ""
	}
	if s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e {
			if c != ' ' || s[i+1] == ' ' {
				return false
			}
		}
	}
	return true
}

// breaksLine reports whether r must not appear in a single-line label: a
// control character, one of the Unicode line and paragraph separators,
// which are not control characters but end a line all the same, or a bidi
// control (an override, embedding, isolate or mark), which is not one
// either but reorders the rest of the row as it is shown, so that a label
// could make its row read as another.
func breaksLine(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r)
}

// ParsedStatus is a status block read back from the text a model was
// shown, by a checker that did not build it (crux-sim serve reads the
// blocks another runtime wrote into its requests).
type ParsedStatus struct {
	// Block has the text as it was read, the rows that are in the
	// block's format, and the count of an omitted-rows line.
	Block StatusBlock
	// Lines are the block's row lines as written, in order, whether or
	// not they are in the format (the omitted-rows line excluded).
	Lines []string
	// Problems say how lines depart from the format, one per line.
	Problems []string
}

// ParseStatus reads a status block: a text that starts with StatusHeader,
// then one row per line as StatusRow.String renders it. A last line that
// counts rows left out by the cap, "(N more not shown; use work with
// action "list")", which this runtime no longer writes, is read as that
// count rather than as a malformed row. ok is false when the text is
// not a status block at all (it does not start with the header).
func ParseStatus(text string) (ps ParsedStatus, ok bool) {
	rest, ok := strings.CutPrefix(text, StatusHeader)
	if !ok {
		return ParsedStatus{}, false
	}
	ps.Block.Text = text
	lines := strings.Split(rest, "\n")
	if lines[0] != "" {
		ps.Problems = append(ps.Problems, fmt.Sprintf("the header %q is followed by %q on its line; rows start on the next line", StatusHeader, lines[0]))
	}
	for i, line := range lines[1:] {
		if n, ok := omittedCount(line); ok && i == len(lines)-2 {
			ps.Block.Omitted = n
			continue
		}
		ps.Lines = append(ps.Lines, line)
		row, err := ParseStatusRow(line)
		if err != nil {
			ps.Problems = append(ps.Problems, err.Error())
			continue
		}
		ps.Block.Rows = append(ps.Block.Rows, row)
	}
	return ps, true
}

// omittedCount reads the last line of a capped block.
func omittedCount(line string) (int, bool) {
	num, ok := strings.CutPrefix(line, "(")
	if !ok {
		return 0, false
	}
	num, ok = strings.CutSuffix(num, omittedTail)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(num)
	return n, err == nil && n > 0 && strconv.Itoa(n) == num
}

// omittedTail ends the line that counted rows left out by the cap.
const omittedTail = ` more not shown; use work with action "list")`

// ParseStatusRow reads one row exactly as StatusRow.String renders it,
// "- w-1 · research · completed 9s · Result available": the id and label
// single-line (SafeLabel leaves them as they are), one of the six states,
// whole elapsed seconds, and nothing else. Any other line is an error that
// quotes it.
func ParseStatusRow(line string) (StatusRow, error) {
	bad := func(why string) (StatusRow, error) {
		return StatusRow{}, fmt.Errorf("status row %q: %s", line, why)
	}
	body, ok := strings.CutPrefix(line, "- ")
	if !ok {
		return bad(`a row starts with "- "`)
	}
	parts := strings.Split(body, " · ")
	if len(parts) < 3 {
		return bad("a row is id · label · state and elapsed seconds, optionally · Result available")
	}
	// The state field is the last one that reads "state Ns" (a label may
	// itself hold the separator); after it comes at most "Result available".
	at := -1
	for k := len(parts) - 1; k >= 2 && at < 0; k-- {
		if _, _, ok := stateField(parts[k]); ok {
			at = k
		}
	}
	if at < 0 {
		last := parts[len(parts)-1]
		if last == "Result available" && len(parts) > 3 {
			last = parts[len(parts)-2]
		}
		state, secs, _ := strings.Cut(last, " ")
		if !lifecycle.State(state).Valid() {
			return bad(fmt.Sprintf("%q is not a Work state (one of queued, running, completed, failed, cancel-requested, cancelled)", state))
		}
		return bad(fmt.Sprintf("the state is followed by whole elapsed seconds, such as %s 4s; found %q", state, secs))
	}
	tail := parts[at+1:]
	if len(tail) > 1 || (len(tail) == 1 && tail[0] != "Result available") {
		return bad("it carries more than id, label, state, elapsed seconds and result availability: " + strconv.Quote(strings.Join(tail, " · ")))
	}
	state, n, _ := stateField(parts[at])
	r := StatusRow{ID: parts[0], Label: strings.Join(parts[1:at], " · "), State: state, ResultAvailable: len(tail) == 1}
	r.Elapsed = time.Duration(n) * time.Second
	if r.ID == "" || SafeLabel(r.ID) != r.ID || r.Label == "" || SafeLabel(r.Label) != r.Label {
		return bad("the id and the label are single-line and at most 96 characters")
	}
	if r.String() != line {
		return bad("it is not in the row format")
	}
	return r, nil
}

// stateField reads a row's "state Ns" field.
func stateField(f string) (lifecycle.State, int64, bool) {
	state, secs, ok := strings.Cut(f, " ")
	num, unit := strings.CutSuffix(secs, "s")
	n, err := strconv.ParseInt(num, 10, 64)
	if !ok || !unit || err != nil || n < 0 || strconv.FormatInt(n, 10) != num || !lifecycle.State(state).Valid() {
		return "", 0, false
	}
	return lifecycle.State(state), n, true
}
