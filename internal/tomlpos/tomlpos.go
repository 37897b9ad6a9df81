// Package tomlpos owns the mapping from a TOML document to the line:col
// positions that diagnostics report: a line index that turns byte offsets
// into 1-based lines and columns, and a key index that turns key paths
// ("plugin.name", "tool[1].input_schema", "llm.local.timeout") into the
// offsets of their values.
//
// Building either index costs more than decoding the document, so callers
// build them only once there is a problem to report; decoding itself is the
// job of go-toml, and turning problems into diagnostics stays with each
// caller.
package tomlpos

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// Lines holds the offset where each line starts, so that turning many
// offsets into positions stays cheap even for a hostile file.
type Lines []int

// NewLines indexes the line starts of data.
func NewLines(data []byte) Lines {
	lines := Lines{0}
	for i, c := range data {
		if c == '\n' {
			lines = append(lines, i+1)
		}
	}
	return lines
}

// Pos converts a byte offset to a 1-based line and column (in bytes, like
// the TOML decoder's own positions).
func (lines Lines) Pos(off int) (line, col int) {
	i, exact := slices.BinarySearch(lines, off)
	if !exact {
		i--
	}
	return i + 1, off - lines[i] + 1
}

// Pos is where a key is in the document.
type Pos struct {
	// Off is the byte offset of the value, of the header that opens a
	// table, or of the first key of a dotted key that defines a table
	// implicitly; -1 for none.
	Off int
	// Content is the offset of a string's text when it appears verbatim
	// (no escapes), so positions inside the string can be mapped; else -1.
	Content int
}

// Options say how deep IndexKeys goes and how it names what it finds.
type Options struct {
	// MaxDepth bounds how many levels of inline tables and arrays below a
	// key/value pair are indexed; the bound keeps a hostile, deeply nested
	// document from costing quadratic time.
	MaxDepth int
	// Elements indexes arrays and arrays of tables by element, as in
	// "tool[1].name" (a header refers to the last element of any array of
	// tables it goes through), and a table header replaces whatever the
	// path held. Without it, arrays are not entered, paths hold only keys,
	// the first header of a path wins and Find climbs only at dots.
	Elements bool
}

// Keys maps key paths ("plugin.name", "tool[1].input_schema") to positions.
// Keys are stored in lower case because decoders match keys to fields
// regardless of case.
type Keys struct {
	pos      map[string]Pos
	elements bool
}

// IndexKeys indexes the keys of data. A parse error only stops the index
// early: callers index documents the decoder has already accepted.
func IndexKeys(data []byte, opts Options) Keys {
	idx := Keys{pos: map[string]Pos{}, elements: opts.Elements}
	arrays := map[string]int{} // array-of-tables path -> elements so far
	table := ""
	var p unstable.Parser
	p.Reset(data)
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = ""
			var start int
			for it := e.Key(); it.Next(); {
				k := it.Node()
				if table == "" {
					start = int(k.Raw.Offset)
				}
				table = join(table, string(k.Data))
				if n, ok := arrays[table]; ok && !(it.IsLast() && e.Kind == unstable.ArrayTable) {
					table = fmt.Sprintf("%s[%d]", table, n-1)
				}
			}
			if e.Kind == unstable.ArrayTable && opts.Elements {
				n := arrays[table]
				arrays[table] = n + 1
				table = fmt.Sprintf("%s[%d]", table, n)
			}
			// Point at the opening bracket rather than the name.
			for start > 0 && strings.IndexByte("[ \t", data[start-1]) >= 0 {
				start--
			}
			if _, ok := idx.pos[table]; !ok || opts.Elements {
				idx.pos[table] = Pos{Off: start, Content: -1}
			}
		case unstable.KeyValue:
			idx.keyValue(data, table, e, 0, opts.MaxDepth)
		}
	}
	return idx
}

func join(table, key string) string {
	key = strings.ToLower(key)
	if table == "" {
		return key
	}
	return table + "." + key
}

func (idx Keys) keyValue(data []byte, table string, kv *unstable.Node, depth, maxDepth int) {
	path := table
	var last *unstable.Node
	for it := kv.Key(); it.Next(); {
		last = it.Node()
		path = join(path, string(last.Data))
		// Dotted keys define tables implicitly; remember where, so that a
		// key missing from such a table is reported next to it.
		if _, ok := idx.pos[path]; !ok && !it.IsLast() {
			idx.pos[path] = Pos{Off: int(last.Raw.Offset), Content: -1}
		}
	}
	if last == nil {
		return
	}
	// Arrays carry no position of their own: find the value after "=".
	off := int(last.Raw.Offset + last.Raw.Length)
	for off < len(data) && strings.IndexByte(" \t=", data[off]) >= 0 {
		off++
	}
	idx.value(data, path, kv.Value(), off, depth, maxDepth)
}

func (idx Keys) value(data []byte, path string, v *unstable.Node, off, depth, maxDepth int) {
	pos := Pos{Off: off, Content: -1}
	if v.Raw.Length > 0 {
		pos.Off = int(v.Raw.Offset)
	}
	if v.Kind == unstable.String {
		pos.Content = verbatim(data, v)
	}
	idx.pos[path] = pos
	if depth >= maxDepth {
		return
	}
	switch v.Kind {
	case unstable.InlineTable:
		for it := v.Children(); it.Next(); {
			idx.keyValue(data, path, it.Node(), depth+1, maxDepth)
		}
	case unstable.Array:
		if !idx.elements {
			return
		}
		i := 0
		for it := v.Children(); it.Next(); {
			if e := it.Node(); e.Kind != unstable.Comment {
				idx.value(data, fmt.Sprintf("%s[%d]", path, i), e, pos.Off, depth+1, maxDepth)
				i++
			}
		}
	}
}

// verbatim returns the offset of a string value's text when the document
// holds it unescaped, or -1.
func verbatim(data []byte, v *unstable.Node) int {
	raw := data[v.Raw.Offset : v.Raw.Offset+v.Raw.Length]
	quote := 1
	if bytes.HasPrefix(raw, []byte(`'''`)) || bytes.HasPrefix(raw, []byte(`"""`)) {
		quote = 3
	}
	if len(raw) < 2*quote {
		return -1
	}
	start := quote
	if quote == 3 { // TOML drops a newline right after the opening quotes
		if bytes.HasPrefix(raw[start:], []byte("\r\n")) {
			start += 2
		} else if bytes.HasPrefix(raw[start:], []byte("\n")) {
			start++
		}
	}
	if start > len(raw)-quote || !bytes.Equal(raw[start:len(raw)-quote], v.Data) {
		return -1
	}
	return int(v.Raw.Offset) + start
}

// Find returns the position of key, which must be in lower case, or of the
// nearest enclosing table or array element that is in the document (Off -1
// for none); found reports an exact match.
func (idx Keys) Find(key string) (pos Pos, found bool) {
	up := ".["
	if !idx.elements {
		up = "."
	}
	for k := key; k != ""; k = k[:max(strings.LastIndexAny(k, up), 0)] {
		if pos, ok := idx.pos[k]; ok {
			return pos, k == key
		}
	}
	return Pos{Off: -1, Content: -1}, false
}
