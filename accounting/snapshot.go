package accounting

// Snapshot is a copy of every figure of a registry, sorted by layer name and
// within a layer by type and counter name. It marshals to JSON as is (the
// structured form for the command line and metrics); WriteText prints the
// statedump form.
type Snapshot struct {
	Layers []LayerStat `json:"layers"`
}

// LayerStat holds the figures of one layer.
type LayerStat struct {
	Name     string        `json:"name"`
	Types    []TypeStat    `json:"types"`
	Counters []CounterStat `json:"counters"`
}

// TypeStat holds the figures of one Record.
type TypeStat struct {
	Name  string `json:"name"`
	Size  int64  `json:"size,omitempty"` // object size of a FixedType
	Live  int64  `json:"live"`           // objects alive
	Bytes int64  `json:"bytes"`          // bytes they hold
	Total uint64 `json:"total"`          // objects ever allocated
	Frees uint64 `json:"frees"`          // objects ever freed
	Peak  int64  `json:"peak"`           // highest live bytes seen (see doc.go, "Peak")

	// Anomalies counts misuse: frees beyond allocations (the largest excess
	// ever seen) plus calls with a bad size. Zero in a correct program.
	Anomalies int64 `json:"anomalies"`
	// AnomalyBytes is the largest excess of bytes freed over bytes allocated.
	AnomalyBytes int64 `json:"anomaly_bytes"`
}

// CounterStat holds the value of one Counter.
type CounterStat struct {
	Name      string `json:"name"`
	Value     uint64 `json:"value"`
	Anomalies int64  `json:"anomalies"` // Add calls with a negative n
}

// Snapshot copies every figure. It takes only read locks on the name maps,
// so it never stops an update; figures updated while it runs may or may not
// be included, and each record is read on its own.
func (r *Registry) Snapshot() Snapshot {
	s := Snapshot{Layers: []LayerStat{}}
	for _, l := range sortedValues(&r.mu, r.layers) {
		ls := LayerStat{Name: l.name, Types: []TypeStat{}, Counters: []CounterStat{}}
		for _, rec := range sortedValues(&l.mu, l.types) {
			ls.Types = append(ls.Types, rec.stat())
		}
		for _, c := range sortedValues(&l.mu, l.counters) {
			ls.Counters = append(ls.Counters, CounterStat{Name: c.name, Value: c.Value(), Anomalies: c.invalid.Load()})
		}
		s.Layers = append(s.Layers, ls)
	}
	return s
}

// stat reads a record. It reads every free total before any allocation
// total: each free of a correct program follows its allocation, so the
// allocations read are then at least the frees read, and an excess is proof
// of misuse, never an artefact of reading while others update. The excess
// is kept (the largest seen) so that later allocations do not hide it.
func (r *Record) stat() TypeStat {
	t := r.sum(true)
	live, bytes := int64(t.allocs-t.frees), int64(t.allocBytes-t.freeBytes)
	raise(&r.deficit, -live)
	raise(&r.deficitBytes, -bytes)
	r.samplePeak()
	return TypeStat{
		Name:         r.name,
		Size:         r.unit,
		Live:         max(live, 0),
		Bytes:        max(bytes, 0),
		Total:        t.allocs,
		Frees:        t.frees,
		Peak:         max(r.peak.Load(), bytes),
		Anomalies:    r.deficit.Load() + r.invalid.Load(),
		AnomalyBytes: r.deficitBytes.Load(),
	}
}

// Layer returns the figures of the named layer.
func (s Snapshot) Layer(name string) (LayerStat, bool) { return find(s.Layers, name) }

// Type returns the figures of the named type.
func (l LayerStat) Type(name string) (TypeStat, bool) { return find(l.Types, name) }

// Counter returns the figures of the named counter.
func (l LayerStat) Counter(name string) (CounterStat, bool) { return find(l.Counters, name) }

func (l LayerStat) key() string   { return l.Name }
func (t TypeStat) key() string    { return t.Name }
func (c CounterStat) key() string { return c.Name }

func find[T interface{ key() string }](xs []T, name string) (T, bool) {
	for _, x := range xs {
		if x.key() == name {
			return x, true
		}
	}
	var zero T
	return zero, false
}
