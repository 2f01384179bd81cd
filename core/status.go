package core

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

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

	order, finOrder uint64
}

// String renders the row, e.g. "- w-1 · research · completed 9s · Result available".
func (r StatusRow) String() string {
	var b strings.Builder
	b.Grow(len(r.ID) + len(r.Label) + len(r.State) + 48) // one allocation for the whole row
	b.WriteString("- ")
	b.WriteString(r.ID)
	b.WriteString(" · ")
	b.WriteString(r.Label)
	b.WriteString(" · ")
	b.WriteString(string(r.State))
	b.WriteByte(' ')
	b.WriteString(strconv.FormatInt(int64(r.Elapsed/time.Second), 10))
	b.WriteByte('s')
	if r.ResultAvailable {
		b.WriteString(" · Result available")
	}
	return b.String()
}

// buildStatus orders and caps sampled rows: unfinished Work first, oldest
// first; then finished Work, most recently finished first.
func buildStatus(rows []StatusRow) *StatusBlock {
	if len(rows) == 0 {
		return nil
	}
	slices.SortStableFunc(rows, func(a, b StatusRow) int {
		at, bt := a.State.Terminal(), b.State.Terminal()
		switch {
		case !at && !bt:
			return cmp.Compare(a.order, b.order)
		case at && bt:
			return cmp.Compare(b.finOrder, a.finOrder)
		case at:
			return 1
		default:
			return -1
		}
	})
	blk := &StatusBlock{}
	if len(rows) > MaxStatusRows {
		blk.Omitted = len(rows) - MaxStatusRows
		rows = rows[:MaxStatusRows]
	}
	var b strings.Builder
	b.Grow(len(StatusHeader) + 64*len(rows))
	b.WriteString(StatusHeader)
	for i := range rows {
		rows[i].ID = SafeLabel(rows[i].ID)
		rows[i].Label = SafeLabel(rows[i].Label)
		b.WriteByte('\n')
		b.WriteString(rows[i].String())
	}
	if blk.Omitted > 0 {
		b.WriteString("\n(")
		b.WriteString(strconv.Itoa(blk.Omitted))
		b.WriteString(` more not shown; use work with action "list")`)
	}
	blk.Rows = rows
	blk.Text = b.String()
	return blk
}

// SafeLabel makes a value fit on one line of a status row, as the row's
// target label and Work id must: each run of control characters and
// whitespace becomes one space, the ends are trimmed, and a value over
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
// control character, or one of the Unicode line and paragraph separators,
// which are not control characters but end a line all the same.
func breaksLine(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029'
}
