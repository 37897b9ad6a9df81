package manifest

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseManifest checks that Parse never panics, that every diagnostic
// is positioned and worded, and that a manifest without errors survives an
// Encode/Parse round trip.
func FuzzParseManifest(f *testing.F) {
	seeds, err := filepath.Glob("testdata/*.toml")
	if err != nil {
		f.Fatal(err)
	}
	diag, err := filepath.Glob("testdata/diag/*.toml")
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range append(seeds, diag...) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, ds := Parse("fuzz.toml", data)
		checkDiagnostics(t, ds)
		if (m == nil) != ds.HasErrors() {
			t.Fatalf("manifest is nil: %v, but HasErrors: %v", m == nil, ds.HasErrors())
		}
		if m != nil {
			roundTrip(t, m)
		}
	})
}
