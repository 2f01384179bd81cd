package core

// SendIdentityRecords returns, for the specs, the identity record of every
// accepted send: what the runtime keeps to answer a repeated tool-call
// identity. The seed allows a digest of the message there, never its text.
func SendIdentityRecords(rt *Runtime) []any {
	rt.reg.mu.Lock()
	defer rt.reg.mu.Unlock()
	out := make([]any, 0, len(rt.reg.sends))
	for _, rec := range rt.reg.sends {
		out = append(out, rec)
	}
	return out
}
