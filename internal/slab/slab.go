// Package slab hands out values, and runs of them, from chunks allocated a
// few at a time, for a run's many small records (trace parts, platform
// events) that live as long as the run: a few allocations for a run rather
// than one per record. A chunk is never moved, so a pointer into it stays
// good. Texts does the same for strings, in chunks of bytes.
package slab

// Defaults of a Slab's first chunk and largest chunk.
const MinChunk, MaxChunk = 8, 256

// Slab hands out zero values of T. Its zero value starts with chunks of
// MinChunk values and doubles them up to MaxChunk.
type Slab[T any] struct {
	free []T
	// chunk is the length of the next chunk (MinChunk when 0), at most
	// max (MaxChunk when 0).
	chunk, max int
}

// Sized returns a slab whose first chunk holds first values and whose
// chunks double up to most values.
func Sized[T any](first, most int) Slab[T] { return Slab[T]{chunk: first, max: most} }

// New returns a zero value.
func (s *Slab[T]) New() *T { return &s.Take(1)[0] }

// Take returns n zero values, as a slice with no room to grow into the
// values after them.
func (s *Slab[T]) Take(n int) []T {
	if len(s.free) < n {
		c := s.chunk
		if c == 0 {
			c = MinChunk
		}
		s.free = make([]T, max(c, n))
		s.chunk = min(2*c, s.most())
	}
	v := s.free[:n:n]
	s.free = s.free[n:]
	return v
}

// Size makes the next chunk about n long (at most the slab's largest).
func (s *Slab[T]) Size(n int) {
	if n > 0 && len(s.free) < n {
		s.chunk = min(n, s.most())
		s.free = nil
	}
}

func (s *Slab[T]) most() int {
	if s.max == 0 {
		return MaxChunk
	}
	return s.max
}
