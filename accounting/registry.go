package accounting

import (
	"slices"
	"sync"
)

// Registry holds the layers of one process (Default) or of one test.
type Registry struct {
	stripes int

	mu     sync.RWMutex // guards layers; never held while a Layer's lock is taken
	layers map[string]*Layer
}

// Layer groups the records and counters of one part of smallfs.
type Layer struct {
	name    string
	stripes int

	mu       sync.RWMutex // guards types and counters
	types    map[string]*Record
	counters map[string]*Counter
}

// Default is the registry smallfs layers use and the stats command shows.
var Default = NewRegistry()

// NewRegistry returns an empty registry. Its records get one stripe per
// quarter processor as GOMAXPROCS is now (see doc.go, "Layout").
func NewRegistry() *Registry {
	return &Registry{stripes: stripeCount(), layers: make(map[string]*Layer)}
}

// Layer returns the layer with this name, creating it on first use. Any
// string is a valid name; the text form quotes names it cannot print bare.
func (r *Registry) Layer(name string) *Layer {
	return getOrCreate(&r.mu, r.layers, name, func() *Layer {
		return &Layer{name: name, stripes: r.stripes, types: make(map[string]*Record), counters: make(map[string]*Counter)}
	})
}

// Name returns the layer's name.
func (l *Layer) Name() string { return l.name }

// Type returns the record of this object type, creating it on first use.
// The lookup takes a read lock: keep the pointer on hot paths.
func (l *Layer) Type(name string) *Record { return l.FixedType(name, 0) }

// FixedType returns the record of a type whose objects all have size bytes,
// creating it on first use. Its live bytes follow from its live count, so an
// update costs one atomic add instead of two; Alloc and Free must pass size.
// A size of 0 or less makes an ordinary Type. The first call for a name
// decides its kind; later calls return that record whatever their size.
func (l *Layer) FixedType(name string, size int64) *Record {
	return getOrCreate(&l.mu, l.types, name, func() *Record { return newRecord(name, size, l.stripes) })
}

// Counter returns the event counter with this name, creating it on first
// use. Counters and types have separate name spaces.
func (l *Layer) Counter(name string) *Counter {
	return getOrCreate(&l.mu, l.counters, name, func() *Counter { return newCounter(name, l.stripes) })
}

func getOrCreate[V any](mu *sync.RWMutex, m map[string]*V, name string, create func() *V) *V {
	mu.RLock()
	v := m[name]
	mu.RUnlock()
	if v != nil {
		return v
	}
	mu.Lock()
	defer mu.Unlock()
	if v = m[name]; v == nil {
		v = create()
		m[name] = v
	}
	return v
}

// sortedValues returns the map's values in name order, under the read lock.
func sortedValues[V any](mu *sync.RWMutex, m map[string]*V) []*V {
	mu.RLock()
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	vs := make([]*V, len(names))
	for i, n := range names {
		vs[i] = m[n]
	}
	mu.RUnlock()
	return vs
}
