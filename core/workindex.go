package core

// The registry keeps each owner's attached Work in the orders that the
// owner's views read it in, so that what a view costs depends on what it
// shows (12 status rows, 50 list entries), not on how much Work the owner
// has ever held:
//
//   - visible: attached Work in creation order (list: oldest first);
//   - open: attached, unfinished Work in creation order (the status block's
//     first rows, oldest first; its length is the outstanding count that
//     admission bounds);
//   - finished: attached, finished Work in finishing order (the status
//     block's later rows, read from the newest end).
//
// The lists are intrusive: each Work carries its own links, so keeping
// them allocates nothing, and detach and finish unlink in O(1).

// The lists a Work item can be on, as indexes of work.links.
const (
	listVisible = iota
	listOpen
	listFinished
	numLists
)

type workLink struct{ prev, next *work }

// workList is one of an owner's ordered lists of Work.
// Its methods are told which of a Work item's links the list uses (the
// list does not hold it: an owner's index is held in its runtime's own
// allocation, which is kept small).
type workList struct {
	head, tail *work
	n          int
}

func (l *workList) pushBack(w *work, which int) {
	lk := &w.links[which]
	lk.prev, lk.next = l.tail, nil
	if l.tail != nil {
		l.tail.links[which].next = w
	} else {
		l.head = w
	}
	l.tail = w
	l.n++
}

func (l *workList) remove(w *work, which int) {
	lk := &w.links[which]
	if lk.prev != nil {
		lk.prev.links[which].next = lk.next
	} else {
		l.head = lk.next
	}
	if lk.next != nil {
		lk.next.links[which].prev = lk.prev
	} else {
		l.tail = lk.prev
	}
	lk.prev, lk.next = nil, nil
	l.n--
}

// ownerWork is one owner's Work: every item it started (detached
// included, in creation order) and its attached Work in the orders above.
type ownerWork struct {
	owner    string
	known    bool // init has run
	all      []*work
	visible  workList
	open     workList
	finished workList
}

// init makes ow the empty index of an owner's Work.
func (ow *ownerWork) init(owner string) {
	*ow = ownerWork{owner: owner, known: true}
}

// add indexes a new, unfinished Work item.
func (o *ownerWork) add(w *work) {
	o.all = append(o.all, w)
	o.visible.pushBack(w, listVisible)
	o.open.pushBack(w, listOpen)
}

// finished moves attached Work that has just become terminal from the
// unfinished list to the newest end of the finished list.
func (o *ownerWork) finish(w *work) {
	if w.detached {
		return
	}
	o.open.remove(w, listOpen)
	o.finished.pushBack(w, listFinished)
}

// detach takes Work out of every attached view.
func (o *ownerWork) detach(w *work) {
	o.visible.remove(w, listVisible)
	if w.state.Terminal() {
		o.finished.remove(w, listFinished)
	} else {
		o.open.remove(w, listOpen)
	}
}
