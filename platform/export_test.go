package platform

// Emit puts e on its log as the platform's own events are (emitLocked),
// for the specs of what a log gives back.
func (p *Platform) Emit(e Event) {
	p.mu.Lock()
	defer p.unlock()
	p.emitLocked(&e)
}
