package platform

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/crux-sim/crux-sim/internal/keys"
	"github.com/crux-sim/crux-sim/platform/store"
)

// Sessions live in one process, but what happens to them does not: a task
// attempt another process runs reports to its spawner, a schedule fired by
// the leader delivers to its origin. An event for a session that is not
// live here is kept in this process's view of that session (parked, what
// Events shows of it) and posted to the session's mailbox in the store
// (store.Mailboxes), as is the notice that wakes it. The process where the
// session is live takes its mail at every task poll (Options.TaskPollInterval,
// which processes sharing a store set) and delivers it as a local event
// would be: onto the session's log, in the order it was posted, waking the
// session for a notice. RestoreSession takes the mail of the session it
// reopens, so an outcome sent while the session was live nowhere survives
// the crash of the process that sent it.
//
// Mail lives until it is delivered or of no more use. Taken mail is gone
// from the store. A session that will never run again takes no more:
// inbox expiry closes its mailbox and drops what waits in it. Mail no
// process took within Options.MailTTL of its posting is removed by
// workspace cleanup (SweepMail), and with it what its sender kept to
// tell it apart at a RestoreSession (sent). The parked log is not mail but
// this process's log of the session, kept as long as any log here.
//
// The same poll records this process's presence (store.Mailboxes
// SetPresence): the roots of its sessions that may run again, for three
// polls, so that another process's workspace sweeper leaves those trees
// alone.

// presencePolls is how many task polls a presence record outlives the
// poll that wrote it: a process that misses two polls (it died) lets its
// trees go.
const presencePolls = 3

// mailBody is a mail as the platform writes it: an event for the
// session's log, or a notice that wakes it.
type mailBody struct {
	Event *mailEvent `json:"event,omitempty"`
	Wake  string     `json:"wake,omitempty"`
}

// mailEvent is an event in a mail. Its metadata travels as a string of
// the bytes emitted, so that the addressee's log has them byte for byte;
// its sequence number and time are the delivering process's.
type mailEvent struct {
	Event
	Metadata string `json:"metadata,omitempty"`
}

// postLocked posts a mail to the mailbox of a session that is not live
// here, and remembers that this process sent it (sent), so that
// RestoreSession here does not deliver twice what the parked log holds:
// until the session is reopened here or the mail expires (SweepMail).
// A crashed process posts nothing.
func (p *Platform) postLocked(session string, body mailBody) {
	raw, err := json.Marshal(body)
	if err != nil {
		return
	}
	var m store.Mail
	if p.durable(func() error {
		var err error
		m, err = p.store.PostMail(p.ctx(), store.Mail{Session: session, From: p.instance, At: p.clock.Now(), Body: string(raw)})
		return err
	}) != nil {
		return
	}
	if p.sent == nil {
		p.sent = map[string][]sentMail{}
	}
	p.sent[session] = append(p.sent[session], sentMail{seq: m.Seq, at: m.At})
}

// sentMail is a mail this process posted to a session not live here: its
// number in the store, and when it was posted.
type sentMail struct {
	seq int64
	at  time.Time
}

// postEventLocked posts e to its session's mailbox.
func (p *Platform) postEventLocked(e *Event) {
	me := &mailEvent{Event: *e, Metadata: string(e.Metadata)}
	me.Event.Metadata = nil
	p.postLocked(e.Session, mailBody{Event: me})
}

// openMailboxLocked makes this process take the mail of s at its task
// polls: a session that mail can be addressed to (a root, the spawner of
// a task, the origin of a schedule). Only a process that polls has
// mailboxes to take; RestoreSession takes a reopened root's itself.
func (p *Platform) openMailboxLocked(s *session) {
	if s.mailbox || p.opts.TaskPollInterval <= 0 || s.over() {
		return
	}
	s.mailbox = true
	p.boxes = append(p.boxes, s)
}

// takeMail is the task poll's delivery: it takes the mail of every
// session whose mailbox this process holds and delivers it.
func (p *Platform) takeMail() {
	p.mu.Lock()
	ids := make([]string, len(p.boxes))
	for i, s := range p.boxes {
		ids[i] = s.id
	}
	p.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	var mail []store.Mail
	if p.durable(func() error {
		var err error
		mail, err = p.store.TakeMail(p.ctx(), ids)
		return err
	}) != nil || len(mail) == 0 {
		return
	}
	p.mu.Lock()
	defer p.unlock()
	for _, m := range mail {
		p.deliverLocked(m)
	}
}

// deliverLocked delivers a mail to its session, live here, as a local
// event or notice would be: the event onto its log (numbered and stamped
// here), the notice into its queue, waking it unless it will never run
// again.
func (p *Platform) deliverLocked(m store.Mail) {
	s := p.sessions.get(m.Session)
	var body mailBody
	if s == nil || json.Unmarshal([]byte(m.Body), &body) != nil {
		return
	}
	if me := body.Event; me != nil {
		e := me.Event
		if me.Metadata != "" {
			e.Metadata = json.RawMessage(me.Metadata)
		}
		e.Seq, e.Time, e.From = 0, time.Time{}, m.From
		p.emitOnLocked(s, &e)
	}
	if body.Wake != "" && !s.over() {
		s.queue(body.Wake)
		p.wakeLocked(s)
	}
}

// restoreMailLocked takes the mail of a session being reopened here and
// delivers what other processes sent it; what this process sent is on
// its parked log already.
func (p *Platform) restoreMailLocked(s *session) {
	var mail []store.Mail
	if p.durable(func() error {
		var err error
		mail, err = p.store.TakeMail(p.ctx(), []string{s.id})
		return err
	}) != nil {
		return
	}
	mine := p.sent[s.id]
	delete(p.sent, s.id)
	for _, m := range mail {
		if m.From == p.instance && slices.ContainsFunc(mine, func(sm sentMail) bool { return sm.seq == m.Seq }) {
			continue
		}
		p.deliverLocked(m)
	}
}

// endedLocked notes that s, whose state just changed, will never run
// again if it could before (was is whether it was over then): a session
// whose mailbox is open waits in ended for inbox expiry to close it.
func (p *Platform) endedLocked(s *session, was bool) {
	if s.mailbox && !was && s.over() {
		p.ended = append(p.ended, s)
	}
}

// closeEndedMailboxesLocked is inbox expiry's part of mail: the mailboxes
// of the sessions that will never run again (ended) are closed, so that
// the task polls no longer take them, and the mail waiting in them is
// dropped. Mail posted to them later waits out Options.MailTTL, as mail
// to a session live nowhere does, and SweepMail removes it. It returns
// how many mails it dropped.
func (p *Platform) closeEndedMailboxesLocked() int {
	if len(p.ended) == 0 {
		return 0
	}
	ids := make([]string, len(p.ended))
	for i, s := range p.ended {
		s.mailbox, ids[i] = false, s.id
	}
	p.boxes = slices.DeleteFunc(p.boxes, func(s *session) bool { return !s.mailbox })
	clear(p.ended)
	p.ended = p.ended[:0]
	var dropped []store.Mail
	_ = p.durable(func() error {
		var err error
		dropped, err = p.store.TakeMail(p.ctx(), ids)
		return err
	})
	return len(dropped)
}

// SweepMail is the mail part of workspace cleanup, on its cadence: it
// removes from the store the mail that no process took within
// Options.MailTTL of its posting (its addressee is live nowhere, or will
// never run again), and forgets what this process posted before then
// (sent): a RestoreSession here has no such mail left to tell apart from
// what its parked log holds. It returns how many mails it removed.
func (p *Platform) SweepMail(now time.Time) int {
	cutoff := now.Add(-p.opts.MailTTL)
	n := 0
	if p.durable(func() error {
		var err error
		n, err = p.store.ExpireMail(p.ctx(), cutoff)
		return err
	}) != nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, mine := range p.sent {
		// Posted in order, so the expired ones come first.
		gone := 0
		for gone < len(mine) && mine[gone].at.Before(cutoff) {
			gone++
		}
		switch {
		case gone == len(mine):
			delete(p.sent, id)
		case gone > 0:
			p.sent[id] = slices.Delete(mine, 0, gone)
		}
	}
	return n
}

// sharePresence records the roots of this process's sessions that may
// run again (mayRunLocked) as present, until presencePolls task polls from now.
func (p *Platform) sharePresence() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sharePresenceLocked()
}

func (p *Platform) sharePresenceLocked() {
	roots := p.presentRootsLocked()
	until := p.clock.Now().Add(presencePolls * p.opts.TaskPollInterval)
	_ = p.durable(func() error { return p.store.SetPresence(p.ctx(), p.instance, roots, until) })
}

// presentRootsLocked are the roots of the sessions here that are not
// terminal, sorted.
func (p *Platform) presentRootsLocked() []string {
	live := map[string]bool{}
	for _, s := range p.order {
		if p.mayRunLocked(s) {
			live[s.root] = true
		}
	}
	return keys.Sorted(live)
}

// mayRunLocked reports whether the session may run again in this process:
// it is not over, and if it is a completed worker, the parent that could
// wake it with send_worker_message may run again too (a worker whose parent
// is not live here is kept, since nothing here knows it is over). A tree
// none of whose sessions may run is not live: its workspace can be swept.
func (p *Platform) mayRunLocked(s *session) bool {
	if s.over() {
		return false
	}
	if s.kind == KindWorker && s.state == StateCompleted {
		if parent := p.sessions.get(s.parent); parent != nil {
			return !parent.over()
		}
	}
	return true
}
