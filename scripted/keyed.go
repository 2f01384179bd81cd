package scripted

// keyed maps strings to values for the few keys a provider has of each
// kind (its scripts, its agents, their runs): the first eight are kept in
// a list, which costs less to look up than a map and no allocation, and
// any past them in a map.
type keyed[V any] struct {
	few  [8]keyedEntry[V]
	n    int
	more map[string]V
}

type keyedEntry[V any] struct {
	key string
	v   V
}

// get returns key's value and whether it has one.
func (k *keyed[V]) get(key string) (V, bool) {
	for i := range k.few[:k.n] {
		if k.few[i].key == key {
			return k.few[i].v, true
		}
	}
	v, ok := k.more[key]
	return v, ok
}

// set gives key the value v.
func (k *keyed[V]) set(key string, v V) {
	for i := range k.few[:k.n] {
		if k.few[i].key == key {
			k.few[i].v = v
			return
		}
	}
	if k.n < len(k.few) {
		k.few[k.n] = keyedEntry[V]{key: key, v: v}
		k.n++
		return
	}
	if k.more == nil {
		k.more = map[string]V{}
	}
	k.more[key] = v
}

func (k *keyed[V]) len() int { return k.n + len(k.more) }

// each yields every key and its value.
func (k *keyed[V]) each(yield func(string, V) bool) {
	for _, e := range k.few[:k.n] {
		if !yield(e.key, e.v) {
			return
		}
	}
	for key, v := range k.more {
		if !yield(key, v) {
			return
		}
	}
}
