// Package fewmap is a map from strings for the few keys a run has of a
// kind (a provider's scripts, the agents of a trace): the first eight are
// kept in a list, which costs less to look up than a map and no
// allocation, and any past them in a map.
package fewmap

// Map maps strings to values. Its zero value is empty and ready to use.
type Map[V any] struct {
	few  [8]entry[V]
	n    int
	more map[string]V
}

type entry[V any] struct {
	key string
	v   V
}

// Get returns key's value and whether it has one.
func (m *Map[V]) Get(key string) (V, bool) {
	for i := range m.few[:m.n] {
		if m.few[i].key == key {
			return m.few[i].v, true
		}
	}
	v, ok := m.more[key]
	return v, ok
}

// Set gives key the value v.
func (m *Map[V]) Set(key string, v V) {
	for i := range m.few[:m.n] {
		if m.few[i].key == key {
			m.few[i].v = v
			return
		}
	}
	if m.n < len(m.few) {
		m.few[m.n] = entry[V]{key: key, v: v}
		m.n++
		return
	}
	if m.more == nil {
		m.more = map[string]V{}
	}
	m.more[key] = v
}

// Len returns the number of keys.
func (m *Map[V]) Len() int { return m.n + len(m.more) }

// All yields every key and its value: the first eight in the order they
// were set, the rest in a map's order.
func (m *Map[V]) All(yield func(string, V) bool) {
	for _, e := range m.few[:m.n] {
		if !yield(e.key, e.v) {
			return
		}
	}
	for key, v := range m.more {
		if !yield(key, v) {
			return
		}
	}
}
