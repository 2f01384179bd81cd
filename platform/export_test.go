package platform

// Emit puts e on its log as the platform's own events are (emitLocked),
// for the specs of what a log gives back.
func (p *Platform) Emit(e Event) {
	p.mu.Lock()
	defer p.unlock()
	p.emitLocked(&e)
}

// MailBookkeeping is what p keeps in memory for mail: the mails it
// posted to sessions not live here that it remembers (sent), and the
// mailboxes it takes at its task polls (boxes).
func (p *Platform) MailBookkeeping() (sent, boxes int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, mine := range p.sent {
		sent += len(mine)
	}
	return sent, len(p.boxes)
}
