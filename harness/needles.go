package harness

import (
	"slices"
	"strings"
)

// needles is a set of strings to look for in texts (child outputs and
// failure texts in status rows, results and requests), each with an order,
// that answers which of them a text contains first in that order. A run
// with N background children checks every entry against up to N of them:
// a strings.Contains per needle made such a run quadratic, so past a few
// needles the set finds candidates by the needle's first bytes, in one pass
// over the text however many needles it holds.
type needles struct {
	list []needle
	live int
	// byKey maps the first keyLen bytes of each needle at least that long
	// to its positions in list; filter has a bit set for each key's hash,
	// so that most of a text's positions cost one bit test.
	byKey  map[uint32][]int32
	filter []uint64
	short  []int32 // needles shorter than keyLen, always compared whole
	found  []int32 // scratch: the candidates a search found
}

type needle struct {
	s     string
	order int
	tag   string // what the needle stands for (a Work id)
	live  bool
}

const (
	keyLen = 4
	// linearNeedles is how many live needles a search compares one by one
	// before it indexes them: below it, strings.Contains is cheaper.
	linearNeedles = 16
	filterBits    = 1 << 16
)

// add puts s in the set with its order and tag and returns its position,
// which remove takes.
func (n *needles) add(s string, order int, tag string) int {
	i := len(n.list)
	n.list = append(n.list, needle{s: s, order: order, tag: tag, live: true})
	n.live++
	if n.byKey != nil {
		n.index(i)
	}
	return i
}

// index adds the needle at position i to the index.
func (n *needles) index(i int) {
	s := n.list[i].s
	if len(s) < keyLen {
		n.short = append(n.short, int32(i))
		return
	}
	k := key(s, 0)
	n.byKey[k] = append(n.byKey[k], int32(i))
	h := hashKey(k)
	n.filter[h/64] |= 1 << (h % 64)
}

// remove takes the needle at position i out of the set.
func (n *needles) remove(i int) {
	if n.list[i].live {
		n.list[i].live = false
		n.live--
	}
}

// first returns the position of the live needle of least order that text
// contains and ok accepts (ok nil accepts every one), or -1; of needles of
// equal order, the one added first.
func (n *needles) first(text string, ok func(i int) bool) int {
	if n.live == 0 {
		return -1
	}
	if n.live <= linearNeedles {
		best := -1
		for i := range n.list {
			nd := &n.list[i]
			if nd.live && (best < 0 || nd.order < n.list[best].order) && strings.Contains(text, nd.s) && (ok == nil || ok(i)) {
				best = i
			}
		}
		return best
	}
	if n.byKey == nil {
		// Indexed from the first search past linearNeedles on.
		n.byKey = map[uint32][]int32{}
		n.filter = make([]uint64, filterBits/64)
		for i := range n.list {
			n.index(i)
		}
	}
	n.found = n.found[:0]
	for _, i := range n.short {
		if n.list[i].live && strings.Contains(text, n.list[i].s) {
			n.found = append(n.found, i)
		}
	}
	for p := 0; p+keyLen <= len(text); p++ {
		k := key(text, p)
		if h := hashKey(k); n.filter[h/64]&(1<<(h%64)) == 0 {
			continue
		}
		for _, i := range n.byKey[k] {
			if nd := &n.list[i]; nd.live && strings.HasPrefix(text[p:], nd.s) {
				n.found = append(n.found, i)
			}
		}
	}
	slices.SortFunc(n.found, func(a, b int32) int {
		if d := n.list[a].order - n.list[b].order; d != 0 {
			return d
		}
		return int(a - b) // of equal orders, the first added
	})
	for _, i := range n.found {
		if ok == nil || ok(int(i)) {
			return int(i)
		}
	}
	return -1
}

func key(s string, p int) uint32 {
	return uint32(s[p]) | uint32(s[p+1])<<8 | uint32(s[p+2])<<16 | uint32(s[p+3])<<24
}

func hashKey(k uint32) uint32 { return (k * 2654435761) >> 16 }
