package launch

import (
	"strings"
	"testing"

	pluginv1 "github.com/nexus-eval/nexus/internal/pb/nexus/plugin/v1"
	"github.com/nexus-eval/nexus/internal/wire"
	"github.com/nexus-eval/nexus/manifest"
)

func TestTailKeepsLastLinesBounded(t *testing.T) {
	t.Parallel()
	tl := newTail(3)
	for _, s := range []string{"one\ntw", "o\nthree\n", "four\nfi"} {
		tl.Write([]byte(s))
	}
	if got, want := tl.String(), "three\nfour\nfi"; got != want {
		t.Errorf("tail = %q, want %q", got, want)
	}
	tl.Write([]byte(strings.Repeat("x", 10*maxLine)))
	tl.Write([]byte("\n"))
	for _, l := range strings.Split(tl.String(), "\n") {
		if len(l) > maxLine {
			t.Fatalf("kept a line of %d bytes, limit %d", len(l), maxLine)
		}
	}
}

func TestCompare(t *testing.T) {
	t.Parallel()
	c := manifest.Component{Name: "echo", Description: "d", InputSchema: `{"type": "object"}`, OutputSchema: `{"type":"object"}`, Kind: manifest.ToolLocal, Task: manifest.TaskForbidden}
	m := &manifest.Manifest{Plugin: manifest.Plugin{Name: "p"}, Tools: []manifest.Component{c}}
	describe := func(cs ...manifest.Component) *pluginv1.DescribeResponse {
		d := &pluginv1.DescribeResponse{PluginName: "p"}
		for _, c := range cs {
			d.Components = append(d.Components, wire.ComponentToProto(manifest.KindTool, c))
		}
		return d
	}
	relaid := c
	relaid.InputSchema = "{\n  \"type\":   \"object\"\n}"
	changed := c
	changed.Task = manifest.TaskOptional
	changed.OutputSchema = `{"type":"string"}`
	other := c
	other.Name = "other"

	tests := []struct {
		name string
		d    *pluginv1.DescribeResponse
		want []string
	}{
		{"same", describe(c), nil},
		{"schema layout differs", describe(relaid), nil},
		{"fields differ", describe(changed), []string{`~ tool "echo": task: manifest "forbidden", binary "optional"`, `~ tool "echo": output_schema: manifest {"type":"object"}, binary {"type":"string"}`}},
		{"missing and extra", describe(other), []string{`- tool "echo": declared in the manifest, not served by the binary`, `+ tool "other": served by the binary, not declared in the manifest`}},
		{"nothing served", describe(), []string{`- tool "echo"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Compare(m, tt.d)
			if len(tt.want) == 0 && got != "" {
				t.Fatalf("Compare = %q, want no difference", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("Compare = %q, missing %q", got, w)
				}
			}
		})
	}
}
