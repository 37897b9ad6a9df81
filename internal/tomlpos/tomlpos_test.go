package tomlpos

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestLinesPos(t *testing.T) {
	t.Parallel()
	data := []byte("ab\n\ncd\nx")
	lines := NewLines(data)
	for _, tt := range []struct{ off, line, col int }{
		{0, 1, 1}, {1, 1, 2}, {2, 1, 3}, // the newline ends its line
		{3, 2, 1},
		{4, 3, 1}, {5, 3, 2},
		{7, 4, 1}, {8, 4, 2}, // one past the end
	} {
		if line, col := lines.Pos(tt.off); line != tt.line || col != tt.col {
			t.Errorf("Pos(%d) = %d:%d, want %d:%d", tt.off, line, col, tt.line, tt.col)
		}
	}
	if line, col := NewLines(nil).Pos(0); line != 1 || col != 1 {
		t.Errorf("empty document: Pos(0) = %d:%d, want 1:1", line, col)
	}
}

// at renders the index as "path line:col" lines, plus "+line:col" for the
// text of a verbatim string, so that the cases below read like the document.
func at(data []byte, keys Keys) []string {
	lines := NewLines(data)
	var out []string
	for k, p := range keys.pos {
		line, col := lines.Pos(p.Off)
		s := fmt.Sprintf("%s %d:%d", k, line, col)
		if p.Content >= 0 {
			line, col = lines.Pos(p.Content)
			s += fmt.Sprintf(" +%d:%d", line, col)
		}
		out = append(out, s)
	}
	return out
}

func TestIndexKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		doc  string
		opts *Options // default: elements, depth 4
		want []string
	}{{
		name: "tables and keys, lower-cased",
		doc:  "top = 1\n[Plugin]\nName = \"x\"\n  [ a.b ]\nc=2\n",
		want: []string{"top 1:7", "plugin 2:1", "plugin.name 3:8 +3:9", "a.b 4:1", "a.b.c 5:3"},
	}, {
		name: "arrays of tables count their elements",
		doc:  "[[tool]]\nname = 'a'\n[[tool]]\nname = 'b'\n[tool.input]\nx = 1\n",
		want: []string{"tool[0] 1:1", "tool[0].name 2:8 +2:9", "tool[1] 3:1", "tool[1].name 4:8 +4:9",
			"tool[1].input 5:1", "tool[1].input.x 6:5"},
	}, {
		name: "nested arrays of tables",
		doc:  "[[a]]\n[[a.b]]\n[[a.b]]\n[[a]]\n[[a.b]]\n",
		want: []string{"a[0] 1:1", "a[0].b[0] 2:1", "a[0].b[1] 3:1", "a[1] 4:1", "a[1].b[0] 5:1"},
	}, {
		name: "dotted keys define tables where they start",
		doc:  "[t]\n  x.y.z = 1\n",
		want: []string{"t 1:1", "t.x 2:3", "t.x.y 2:5", "t.x.y.z 2:11"},
	}, {
		name: "inline tables and arrays",
		doc:  "t = { a = [1, { b = \"s\" }], c = {} }\n",
		want: []string{"t 1:5", "t.a 1:11", "t.a[0] 1:12", "t.a[1] 1:15", "t.a[1].b 1:21 +1:22", "t.c 1:33"},
	}, {
		name: "depth bound",
		doc:  "t = { a = { b = { c = 1 } } }\n",
		opts: &Options{MaxDepth: 1, Elements: true},
		want: []string{"t 1:5", "t.a 1:11"},
	}, {
		name: "strings with escapes are not verbatim",
		doc:  "a = \"x\\ty\"\nb = '''\nraw'''\nc = \"\"\"\r\nm\"\"\"\nd = \"\"\n",
		want: []string{"a 1:5", "b 2:5 +3:1", "c 4:5 +5:1", "d 6:5 +6:6"},
	}, {
		name: "without elements: no arrays, and the first header wins",
		doc:  "[[a]]\n[[a]]\nb = [{c = 1}]\n[x]\ny = { z = 1 }\n[x.\"y.z\"]\n",
		opts: &Options{MaxDepth: 3},
		want: []string{"a 1:1", "a.b 3:5", "x 4:1", "x.y 5:5", "x.y.z 5:11"},
	}, {
		name: "a parse error stops the index",
		doc:  "a = 1\nb = \nc = 2\n",
		want: []string{"a 1:5"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := Options{MaxDepth: 4, Elements: true}
			if tt.opts != nil {
				opts = *tt.opts
			}
			data := []byte(tt.doc)
			got := at(data, IndexKeys(data, opts))
			if diff := cmp.Diff(tt.want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("index (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFind(t *testing.T) {
	t.Parallel()
	data := []byte("[[tool]]\nname = 'a'\n[[tool]]\nschema = { x = 1 }\n[llm.local]\nmodel = 'm'\n")
	keys := IndexKeys(data, Options{MaxDepth: 4, Elements: true})
	lines := NewLines(data)
	for _, tt := range []struct {
		key   string
		want  string
		found bool
	}{
		{"tool[0].name", "2:8", true},
		{"tool[1].name", "3:1", false},      // the element's header
		{"tool[1].schema.y", "4:10", false}, // the enclosing inline table
		{"tool[2].name", "none", false},     // no such element, nor "tool"
		{"llm.local.timeout", "5:1", false}, // the enclosing table
		{"llm.remote.model", "none", false}, // "llm" itself has no position
		{"llm.local.model", "6:9", true},
		{"", "none", false},
	} {
		pos, found := keys.Find(tt.key)
		got := "none"
		if pos.Off >= 0 {
			line, col := lines.Pos(pos.Off)
			got = fmt.Sprintf("%d:%d", line, col)
		} else if pos.Content != -1 {
			t.Errorf("Find(%q): Content = %d without a position", tt.key, pos.Content)
		}
		if got != tt.want || found != tt.found {
			t.Errorf("Find(%q) = %s, %v; want %s, %v", tt.key, got, found, tt.want, tt.found)
		}
	}
}

func TestFindWithoutElements(t *testing.T) {
	t.Parallel()
	data := []byte("[llm.x]\n[llm.\"x[1\".sub]\n")
	keys := IndexKeys(data, Options{MaxDepth: 3})
	for _, tt := range []struct {
		key  string
		want int
	}{
		{"llm.x.model", 0},
		{"llm.x[1].model", -1}, // climbs at dots only: not to "llm.x"
		{"llm.x[1.sub.model", 8},
	} {
		if pos, _ := keys.Find(tt.key); pos.Off != tt.want {
			t.Errorf("Find(%q) = %d, want %d", tt.key, pos.Off, tt.want)
		}
	}
}

// A deeply nested document costs time linear in its size.
func TestIndexKeysDeepNesting(t *testing.T) {
	t.Parallel()
	const n = 10000
	data := []byte("a = " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n" +
		"b = " + strings.Repeat("{x=", n) + "1" + strings.Repeat("}", n) + "\n")
	for _, elements := range []bool{false, true} {
		keys := IndexKeys(data, Options{MaxDepth: 4, Elements: elements})
		if len(keys.pos) > 20 {
			t.Errorf("elements %v: indexed %d keys of a deeply nested document, want at most 20", elements, len(keys.pos))
		}
	}
}
