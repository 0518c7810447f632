package vector

import "sync/atomic"

// Store holds vectors of one length in slots numbered from 0 in the order
// they come, each with a payload (what the vector belongs to), the version
// of the store that added it and the version that removed it.
//
// One writer at a time changes a store (its caller's lock orders them),
// and any number of readers read it with no lock, each at the version it
// began with (a View): a slot's vector, sum of squares and payload are
// written once, before the slot is counted, and never change after; its
// removal is an atomic store. So a reader sees exactly the slots present
// at its version, however long it reads, and a writer never waits for it.
//
// Removed slots are not reused (a reader may still be looking at them):
// the owner makes a new store when too many of its slots are removed.
type Store[T any] struct {
	dims    int
	chunks  atomic.Pointer[[]*storeChunk[T]]
	n       atomic.Uint32 // slots written
	version atomic.Uint64 // the version readers see
	dead    int           // slots removed (the writer's count)
}

// chunkBits sets how many slots a chunk holds: 1<<chunkBits.
const chunkBits = 10

const chunkSize = 1 << chunkBits

type storeChunk[T any] struct {
	data []float32 // chunkSize vectors of dims values
	sums [chunkSize]float64
	pay  [chunkSize]T
	born [chunkSize]uint64
	died [chunkSize]atomic.Uint64 // 0: present
}

// NewStore returns an empty store of vectors of dims values.
func NewStore[T any](dims int) *Store[T] {
	s := &Store[T]{dims: dims}
	s.chunks.Store(&[]*storeChunk[T]{})
	return s
}

// Dims returns the length of the store's vectors.
func (s *Store[T]) Dims() int { return s.dims }

// Add appends v (dims values, copied) with its payload p and returns its
// slot. It is present from the next Publish on.
func (s *Store[T]) Add(v []float32, p T) uint32 {
	i := s.n.Load()
	cs := *s.chunks.Load()
	c := int(i >> chunkBits)
	if c == len(cs) {
		grown := append(cs[:len(cs):len(cs)], &storeChunk[T]{data: make([]float32, chunkSize*s.dims)})
		s.chunks.Store(&grown)
		cs = grown
	}
	ch, j := cs[c], int(i&(chunkSize-1))
	copy(ch.data[j*s.dims:(j+1)*s.dims], v)
	ch.sums[j] = SumSquares(v)
	ch.pay[j] = p
	ch.born[j] = s.version.Load() + 1
	s.n.Store(i + 1)
	return i
}

// Remove removes slot i from the next Publish on.
func (s *Store[T]) Remove(i uint32) {
	cs := *s.chunks.Load()
	cs[i>>chunkBits].died[i&(chunkSize-1)].Store(s.version.Load() + 1)
	s.dead++
}

// Publish makes the changes since the last one visible to the readers
// that begin after it, all at once.
func (s *Store[T]) Publish() { s.version.Add(1) }

// Len returns the number of slots, present or removed.
func (s *Store[T]) Len() int { return int(s.n.Load()) }

// Removed returns the number of slots removed (the writer alone calls it).
func (s *Store[T]) Removed() int { return s.dead }

// Vector returns slot i's vector; the caller must not change it.
func (s *Store[T]) Vector(i uint32) []float32 {
	ch := (*s.chunks.Load())[i>>chunkBits]
	j := int(i&(chunkSize-1)) * s.dims
	return ch.data[j : j+s.dims : j+s.dims]
}

// SumSquares returns the sum of the squares of slot i's vector.
func (s *Store[T]) SumSquares(i uint32) float64 {
	return (*s.chunks.Load())[i>>chunkBits].sums[i&(chunkSize-1)]
}

// Payload returns slot i's payload.
func (s *Store[T]) Payload(i uint32) T {
	return (*s.chunks.Load())[i>>chunkBits].pay[i&(chunkSize-1)]
}

// Each calls fn with each slot of view v from slot from on: its number,
// vector (not to be changed), sum of squares and payload.
func (s *Store[T]) Each(v View, from uint32, fn func(i uint32, vec []float32, sumSquares float64, p T)) {
	cs := *s.chunks.Load()
	for i := from; i < v.n; i++ {
		ch, j := cs[i>>chunkBits], i&(chunkSize-1)
		if ch.born[j] > v.version {
			continue
		}
		if d := ch.died[j].Load(); d != 0 && d <= v.version {
			continue
		}
		k := int(j) * s.dims
		fn(i, ch.data[k:k+s.dims:k+s.dims], ch.sums[j], ch.pay[j])
	}
}

// View is the state of a store at one version.
type View struct {
	version uint64
	n       uint32
}

// View returns the store's state now: its published version, and every
// slot that version can hold.
func (s *Store[T]) View() View {
	v := s.version.Load() // before n: every slot of version v is counted
	return View{version: v, n: s.n.Load()}
}

// Len returns the number of slots the view may hold, present or not.
func (v View) Len() int { return int(v.n) }

// Has reports whether slot i of s is present in the view.
func (s *Store[T]) Has(v View, i uint32) bool {
	if i >= v.n {
		return false
	}
	ch := (*s.chunks.Load())[i>>chunkBits]
	j := i & (chunkSize - 1)
	if ch.born[j] > v.version {
		return false
	}
	d := ch.died[j].Load()
	return d == 0 || d > v.version
}
