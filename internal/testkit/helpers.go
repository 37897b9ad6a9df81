package testkit

import (
	"bytes"
	"sync"
	"testing"
)

// Root lays out the given plugin packages in a fresh temporary plugin root
// and returns it.
func (b *Builder) Root(t testing.TB, pkgs ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, pkg := range pkgs {
		if _, err := b.PluginDir(root, pkg); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// SyncBuffer is a goroutine-safe log sink for tests.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
