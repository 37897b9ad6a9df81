package wire_test

import (
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nexus-eval/nexus/host/launch"
	pluginv1 "github.com/nexus-eval/nexus/internal/pb/nexus/plugin/v1"
	"github.com/nexus-eval/nexus/internal/testkit"
	"github.com/nexus-eval/nexus/internal/wire"
	"github.com/nexus-eval/nexus/manifest"
)

// FuzzDescribe feeds arbitrary bytes to the host's side of Describe:
// protobuf decoding, conversion of every component, and the comparison
// with a manifest. None may panic, and every difference is one line
// marked -, + or ~.
func FuzzDescribe(f *testing.F) {
	m, diags := manifest.Load(filepath.Join(testkit.ModuleRoot, "test", "testplugins", "echo", manifest.FileName))
	if diags.HasErrors() {
		f.Fatal(diags.Err())
	}
	seed := func(d *pluginv1.DescribeResponse) {
		b, err := proto.Marshal(d)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// The honest answer, a partial one, a wrong one, an empty one.
	honest := &pluginv1.DescribeResponse{PluginName: m.Plugin.Name, PluginVersion: m.Plugin.Version}
	for _, k := range manifest.Kinds {
		for _, c := range m.Components(k) {
			honest.Components = append(honest.Components, wire.ComponentToProto(k, c))
		}
	}
	seed(honest)
	seed(&pluginv1.DescribeResponse{PluginName: "echo", Components: honest.Components[:2]})
	seed(&pluginv1.DescribeResponse{PluginName: "other", Components: []*pluginv1.Component{{
		Kind: 99, Name: "echo", InputSchema: []byte(`{"$ref":"#"}`), ToolKind: 7, TaskMode: -1, Tags: []string{"", "é"},
	}}})
	seed(&pluginv1.DescribeResponse{})

	f.Fuzz(func(t *testing.T, data []byte) {
		var d pluginv1.DescribeResponse
		if err := proto.Unmarshal(data, &d); err != nil {
			return
		}
		for _, pc := range d.GetComponents() {
			k, c := wire.ComponentFromProto(pc)
			if k != "" && !validKind(k) {
				t.Fatalf("ComponentFromProto returned kind %q", k)
			}
			_ = c
		}
		diff := launch.Compare(m, &d)
		if diff == "" {
			return
		}
		for _, line := range strings.Split(diff, "\n") {
			if line == "" || !strings.ContainsAny(line[:1], "-+~") {
				t.Fatalf("difference line %q is not marked -, + or ~", line)
			}
		}
	})
}

func validKind(k manifest.Kind) bool {
	for _, v := range manifest.Kinds {
		if v == k {
			return true
		}
	}
	return false
}
