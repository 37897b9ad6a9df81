package store

import (
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkRecordInstance measures the database write cost of one
// instance (one durable transaction with three steps).
func BenchmarkRecordInstance(b *testing.B) {
	s, err := Open(b.Context(), filepath.Join(b.TempDir(), "runs.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	r := &Run{Task: "t", Agent: "a"}
	if err := s.CreateRun(b.Context(), r); err != nil {
		b.Fatal(err)
	}
	steps := trajectory()
	i := 0
	for b.Loop() {
		if err := s.RecordInstance(b.Context(), result(r.ID, fmt.Sprint("i", i), "", true), steps); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
