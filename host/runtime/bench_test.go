package runtime

import (
	"os/exec"
	"testing"
)

// BenchmarkStart compares starting /bin/true plainly, in the local runtime
// and in the sandbox (each with and without the limits shim).
func BenchmarkStart(b *testing.B) {
	b.Run("exec", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	limits := Limits{CPUSeconds: 60, MemoryBytes: 1 << 30, Processes: 100, FileSizeBytes: 1 << 30}
	for _, pname := range providerNames {
		for _, l := range []struct {
			name   string
			limits Limits
		}{{"", Limits{}}, {"+limits", limits}} {
			b.Run(pname+l.name, func(b *testing.B) {
				p, _ := DefaultProviders().Get(pname)
				if s, ok := p.(*Sandbox); ok && s.Available() != nil {
					b.Skip(s.Available())
				}
				rt, err := p.New(b.Context(), Options{Limits: l.limits})
				if err != nil {
					b.Fatal(err)
				}
				defer rt.Close()
				for b.Loop() {
					if err := rt.Command(b.Context(), "/bin/true").Run(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	b.Run("sandbox/new+close", func(b *testing.B) {
		p := &Sandbox{}
		if err := p.Available(); err != nil {
			b.Skip(err)
		}
		for b.Loop() {
			rt, err := p.New(b.Context(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			if err := rt.Command(b.Context(), "/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
			if err := rt.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
