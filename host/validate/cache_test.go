package validate

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/host/registry"
	"github.com/nexus-eval/nexus/manifest"
)

// The cache is not observable from outside the package, so this test
// looks inside: many components sharing one schema text share one
// compiled schema, compiled once.
func TestSchemaCompiledOncePerText(t *testing.T) {
	t.Parallel()
	const shared = `{"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}`
	const other = `{"type": "object"}`
	v := New()
	r := registry.New[component.Tool](manifest.KindTool)
	r.Use(v.Tools())
	const n = 50
	for i := range n {
		out := shared
		if i%2 == 1 {
			out = other
		}
		meta := registry.Meta{Plugin: "p", Component: manifest.Component{Name: fmt.Sprintf("t%d", i), InputSchema: shared, OutputSchema: out}}
		if err := r.Register(meta, component.ToolFunc(func(_ context.Context, in json.RawMessage) (json.RawMessage, error) { return in, nil })); err != nil {
			t.Fatal(err)
		}
	}
	if got := cacheSize(v); got != 0 {
		t.Errorf("%d schemas cached before any lookup, want 0: compile on first use", got)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			tool, err := r.Get(context.Background(), fmt.Sprintf("t%d", i))
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := tool.Call(context.Background(), json.RawMessage(`{"x": 1}`)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := cacheSize(v); got != 2 {
		t.Errorf("%d schemas cached for 2 distinct texts, want 2", got)
	}
	// One compiled schema per text, and compiling it again yields the
	// very same resolved schema: sync.OnceValues ran the compiler once.
	c := v.schema(shared)
	rs1, err1 := c.resolve()
	rs2, err2 := v.schema(shared).resolve()
	if err1 != nil || err2 != nil || rs1 != rs2 || v.schema(shared) != c {
		t.Errorf("schema(shared) gave different compiled schemas (%p, %p; errors %v %v)", rs1, rs2, err1, err2)
	}
}

func cacheSize(v *Validator) int {
	n := 0
	v.schemas.Range(func(any, any) bool { n++; return true })
	return n
}

func TestCutText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    string
		limit int
		want  string
	}{
		{"fits", "abc", 3, "abc"},
		{"cut ascii", "abcdefgh", 6, "abc…"},
		{"never splits a rune", "€€€", 7, "€…"}, // 9 bytes; 4 left for text holds one €
		{"rune exactly fits", "€€€€", 9, "€€…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := cutText(tt.in, tt.limit); got != tt.want || len(got) > tt.limit {
				t.Errorf("cutText(%q, %d) = %q (%d bytes), want %q", tt.in, tt.limit, got, len(got), tt.want)
			}
		})
	}
}
