package launch

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	pluginv1 "github.com/nexus-eval/nexus/internal/pb/nexus/plugin/v1"
	"github.com/nexus-eval/nexus/internal/wire"
	"github.com/nexus-eval/nexus/manifest"
)

// Compare returns a line per difference between what m declares and what
// the binary's Describe answer serves, or "" when they agree. Lines start
// with "-" (declared, not served), "+" (served, not declared) or "~"
// (both, but different).
func Compare(m *manifest.Manifest, d *pluginv1.DescribeResponse) string {
	var lines []string
	if d.GetPluginName() != m.Plugin.Name {
		lines = append(lines, fmt.Sprintf("~ plugin name: manifest %q, binary %q", m.Plugin.Name, d.GetPluginName()))
	}
	served := map[string]manifest.Component{}
	for _, pc := range d.GetComponents() {
		k, c := wire.ComponentFromProto(pc)
		served[string(k)+" "+c.Name] = c
	}
	for _, k := range manifest.Kinds {
		for _, want := range m.Components(k) {
			key := string(k) + " " + want.Name
			got, ok := served[key]
			if !ok {
				lines = append(lines, fmt.Sprintf("- %s %q: declared in the manifest, not served by the binary", k, want.Name))
				continue
			}
			delete(served, key)
			for _, f := range fieldDiffs(want, got) {
				lines = append(lines, fmt.Sprintf("~ %s %q: %s", k, want.Name, f))
			}
		}
	}
	var extra []string
	for key := range served {
		kind, name, _ := strings.Cut(key, " ")
		if kind == "" {
			kind = "component of unknown kind"
		}
		extra = append(extra, fmt.Sprintf("+ %s %q: served by the binary, not declared in the manifest", kind, name))
	}
	slices.Sort(extra)
	lines = append(lines, extra...)
	if len(lines) > maxDiffLines {
		n := len(lines) - maxDiffLines
		lines = append(lines[:maxDiffLines], fmt.Sprintf("… and %d more differences", n))
	}
	return strings.Join(lines, "\n")
}

// maxDiffLines keeps a mismatch error readable when a binary differs in
// thousands of components.
const maxDiffLines = 50

func fieldDiffs(want, got manifest.Component) []string {
	var out []string
	diff := func(field, a, b string) {
		if a != b {
			out = append(out, fmt.Sprintf("%s: manifest %s, binary %s", field, short(a), short(b)))
		}
	}
	diff("description", fmt.Sprintf("%q", want.Description), fmt.Sprintf("%q", got.Description))
	if !slices.Equal(want.Tags, got.Tags) {
		diff("tags", fmt.Sprintf("%q", want.Tags), fmt.Sprintf("%q", got.Tags))
	}
	diff("kind", fmt.Sprintf("%q", want.Kind), fmt.Sprintf("%q", got.Kind))
	diff("task", fmt.Sprintf("%q", want.Task), fmt.Sprintf("%q", got.Task))
	if !sameJSON(want.InputSchema, got.InputSchema) {
		diff("input_schema", compact(want.InputSchema), compact(got.InputSchema))
	}
	if !sameJSON(want.OutputSchema, got.OutputSchema) {
		diff("output_schema", compact(want.OutputSchema), compact(got.OutputSchema))
	}
	return out
}

// sameJSON compares two JSON documents by value, ignoring layout and key
// order, so a re-indented manifest still matches its binary.
func sameJSON(a, b string) bool {
	if a == b {
		return true
	}
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func compact(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return fmt.Sprintf("%q", s)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// short keeps diff lines readable when schemas are large.
func short(s string) string {
	const limit = 200
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "…"
}
