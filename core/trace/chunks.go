package trace

import "github.com/crux-sim/crux-sim/internal/slab"

// chunks hands out zero values of T, and runs of them, from chunks
// allocated a few at a time, as slab.Slab does (the same sizes: first,
// then doubling up to most), and keeps its first few chunks when the
// recorder is reset (Recorder.Reset), so that the next run's records take
// the room of the last one's instead of fresh memory (a recorder never
// reset keeps none: it costs nothing more than a slab). A chunk is never
// moved, so a pointer into it stays good until the reset.
type chunks[T any] struct {
	free []T
	// next is the length of the next chunk allocated (slab.MinChunk when
	// 0), at most most (slab.MaxChunk when 0).
	next, most int32
	// kept holds the chunks allocated since the first reset, for the
	// next resets: nil in a recorder never reset, which keeps none.
	kept *keptChunks[T]
}

// keptChunks are the first chunks allocated, in order; chunks[:used]
// have been handed out from since the last reset. A run's records of one
// kind fit in one or two (Recorder.Grow sizes the first).
type keptChunks[T any] struct {
	chunks [4][]T
	used   int
}

func sizedChunks[T any](first, most int32) chunks[T] { return chunks[T]{next: first, most: most} }

// New returns a zero value.
func (c *chunks[T]) New() *T { return &c.Take(1)[0] }

// Take returns n zero values, as a slice with no room to grow into the
// values after them.
func (c *chunks[T]) Take(n int) []T {
	if len(c.free) < n {
		c.refill(n)
	}
	v := c.free[:n:n]
	c.free = c.free[n:]
	return v
}

// refill makes free a chunk of at least n values: a kept one not handed
// out from since the reset, cleared, or a new one.
func (c *chunks[T]) refill(n int) {
	k := c.kept
	for k != nil && k.used < len(k.chunks) && k.chunks[k.used] != nil {
		chunk := k.chunks[k.used]
		k.used++
		if len(chunk) >= n {
			clear(chunk)
			c.free = chunk
			return
		}
	}
	size := int(c.next)
	if size == 0 {
		size = slab.MinChunk
	}
	c.free = make([]T, max(size, n))
	c.next = int32(min(2*size, c.largest()))
	if k != nil && k.used < len(k.chunks) {
		k.chunks[k.used] = c.free
		k.used++
	}
}

// Size makes the next chunk about n long (at most the largest), unless
// the room left holds n. The room left is handed out first: a run that
// fits in it (a short run in a recorder's first chunks) allocates none,
// and one that does not gets the chunk it would have got without it.
func (c *chunks[T]) Size(n int) {
	if n > 0 && len(c.free) < n {
		c.next = int32(min(n, c.largest()))
	}
}

func (c *chunks[T]) largest() int {
	if c.most == 0 {
		return slab.MaxChunk
	}
	return int(c.most)
}

// reset hands the kept chunks out again, from the first, and keeps the
// chunks allocated from now on. Whatever was taken from them before must
// no longer be in use.
func (c *chunks[T]) reset() {
	if c.kept == nil {
		c.kept = &keptChunks[T]{}
	}
	c.kept.used, c.free = 0, nil
}
