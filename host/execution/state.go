package execution

import (
	"encoding/json"
	"maps"
	"sync"
)

// State is the tool state shared by the components of one execution: JSON
// values by key.
type State struct {
	mu     sync.RWMutex
	values map[string]json.RawMessage
}

func newState() *State { return &State{values: map[string]json.RawMessage{}} }

// Get returns the value of key.
func (s *State) Get(key string) (json.RawMessage, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.values[key]
	return v, ok
}

// Set stores value under key; an empty value deletes the key.
func (s *State) Set(key string, value json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(value) == 0 {
		delete(s.values, key)
		return
	}
	s.values[key] = append(json.RawMessage(nil), value...)
}

// Snapshot returns a copy of every value.
func (s *State) Snapshot() map[string]json.RawMessage {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return maps.Clone(s.values)
}
