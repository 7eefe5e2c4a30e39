package unique

import (
	"sync"

	"visitors/internal/store"
)

// Memory is a [store.Sketches] that keeps the sketches in memory, for a
// store that cannot keep them: a restart forgets them. It holds at most
// [store.MaxDays] days. It may be used concurrently.
type Memory struct {
	mu   sync.Mutex // guards days
	days map[store.Day]map[string][]byte
}

var _ store.Sketches = (*Memory)(nil)

// NewMemory returns an empty Memory.
func NewMemory() *Memory { return &Memory{days: make(map[store.Day]map[string][]byte)} }

// PutSketches implements [store.Sketches].
func (m *Memory) PutSketches(d store.Day, sketches []store.Sketch) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	day := m.days[d]
	if day == nil {
		day = make(map[string][]byte)
		m.days[d] = day
		for old := range m.days {
			if old+store.MaxDays <= d {
				delete(m.days, old)
			}
		}
	}
	for _, s := range sketches {
		day[string(s.Key)] = append([]byte(nil), s.Data...)
	}
	return nil
}

// LoadSketches implements [store.Sketches].
func (m *Memory) LoadSketches(d store.Day, fn func(key, data []byte) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, v := range m.days[d] {
		if err := fn([]byte(k), v); err != nil {
			return err
		}
	}
	return nil
}

// SketchDays implements [store.Sketches].
func (m *Memory) SketchDays(key []byte, last store.Day, n int) ([][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([][]byte, n)
	for i := range out {
		if v := m.days[last-store.Day(n-1-i)][string(key)]; v != nil {
			out[i] = append([]byte(nil), v...)
		}
	}
	return out, nil
}
