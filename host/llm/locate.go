package llm

import (
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/nexus-eval/nexus/manifest"
)

// locate positions validation problems. It parses the file a second time to
// learn where each key is, which only happens when something is wrong.
func locate(path string, data []byte, probs []problem) manifest.Diagnostics {
	idx := indexKeys(data)
	lines := newLineIndex(data)
	ds := make(manifest.Diagnostics, 0, len(probs))
	for _, p := range probs {
		line, col := 1, 1
		if off := idx.find(p.key); off >= 0 {
			line, col = lines.pos(off)
		}
		ds = append(ds, manifest.Diagnostic{Path: path, Line: line, Col: col, Message: p.msg})
	}
	return ds
}

// keyIndex maps lower-cased key paths ("llm.local.timeout") to the byte
// offset of their value, or of the header that opens a table. The config
// has only tables of scalars, so it follows tables, dotted keys and inline
// tables, and nothing deeper.
type keyIndex map[string]int

const maxIndexDepth = 3

func indexKeys(data []byte) keyIndex {
	idx := keyIndex{}
	table := ""
	var p unstable.Parser
	p.Reset(data)
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = ""
			start := -1
			for it := e.Key(); it.Next(); {
				k := it.Node()
				if start < 0 {
					start = int(k.Raw.Offset)
				}
				table = join(table, string(k.Data))
			}
			for start > 0 && strings.IndexByte("[ \t", data[start-1]) >= 0 {
				start--
			}
			if _, ok := idx[table]; !ok {
				idx[table] = max(start, 0)
			}
		case unstable.KeyValue:
			idx.keyValue(data, table, e, 0)
		}
	}
	// A parse error only stops the index early: the decoder has already
	// accepted the file, so this does not happen in practice.
	return idx
}

func join(table, key string) string {
	key = strings.ToLower(key)
	if table == "" {
		return key
	}
	return table + "." + key
}

func (idx keyIndex) keyValue(data []byte, table string, kv *unstable.Node, depth int) {
	path := table
	var last *unstable.Node
	for it := kv.Key(); it.Next(); {
		last = it.Node()
		path = join(path, string(last.Data))
		if _, ok := idx[path]; !ok && !it.IsLast() {
			idx[path] = int(last.Raw.Offset)
		}
	}
	if last == nil {
		return
	}
	off := int(last.Raw.Offset + last.Raw.Length)
	for off < len(data) && strings.IndexByte(" \t=", data[off]) >= 0 {
		off++
	}
	v := kv.Value()
	if v.Raw.Length > 0 {
		off = int(v.Raw.Offset)
	}
	idx[path] = off
	if v.Kind == unstable.InlineTable && depth < maxIndexDepth {
		for it := v.Children(); it.Next(); {
			idx.keyValue(data, path, it.Node(), depth+1)
		}
	}
}

// find returns the offset of key, or of the nearest enclosing table in the
// file; -1 when there is none.
func (idx keyIndex) find(key string) int {
	for k := strings.ToLower(key); k != ""; k = k[:max(strings.LastIndexByte(k, '.'), 0)] {
		if off, ok := idx[k]; ok {
			return off
		}
	}
	return -1
}

// lineIndex holds the offset where each line starts.
type lineIndex []int

func newLineIndex(data []byte) lineIndex {
	lines := lineIndex{0}
	for i, c := range data {
		if c == '\n' {
			lines = append(lines, i+1)
		}
	}
	return lines
}

// pos converts a byte offset to a 1-based line and column (in bytes, like
// the TOML decoder's positions).
func (lines lineIndex) pos(off int) (line, col int) {
	i, exact := slices.BinarySearch(lines, off)
	if !exact {
		i--
	}
	return i + 1, off - lines[i] + 1
}
