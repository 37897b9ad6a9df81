package manifest

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// locate turns problems into positioned diagnostics. It parses the document
// a second time to learn where each key is, which costs far more than the
// decode itself, so it runs only when there is something to report.
func locate(path string, data []byte, probs []problem) Diagnostics {
	idx := indexKeys(data)
	lines := newLineIndex(data)
	ds := make(Diagnostics, 0, len(probs))
	for _, p := range probs {
		pos, found := idx.find(p.key)
		msg := p.msg
		if !found && p.missing != "" {
			msg = p.missing
		}
		if p.firstKey != "" {
			first, _ := idx.find(p.firstKey)
			line, _ := lines.pos(max(first.off, 0))
			msg = fmt.Sprintf(msg, line)
		}
		off := pos.off
		if found && p.inside && pos.content >= 0 {
			off = pos.content + p.inValue
		}
		line, col := 1, 1
		if off >= 0 {
			line, col = lines.pos(off)
		}
		ds = append(ds, Diagnostic{Path: path, Line: line, Col: col, Severity: p.severity, Message: msg})
	}
	return ds
}

// lineIndex holds the offset where each line starts, so that turning many
// offsets into positions stays cheap even for a hostile file.
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
// the TOML decoder's own positions).
func (lines lineIndex) pos(off int) (line, col int) {
	i, exact := slices.BinarySearch(lines, off)
	if !exact {
		i--
	}
	return i + 1, off - lines[i] + 1
}

// keyPos is where a key's value starts in the document.
type keyPos struct {
	off int // byte offset of the value, or of the header of a table
	// content is the offset of a string's text when it appears verbatim
	// (no escapes), so positions inside the string can be mapped; else -1.
	content int
}

// keyIndex maps key paths such as "plugin.name" or "tool[1].input_schema"
// to positions. Keys are stored in lower case because the decoder matches
// keys to fields regardless of case.
type keyIndex map[string]keyPos

// maxIndexDepth bounds how deep into nested values the index goes: the
// manifest schema needs three levels, and the bound keeps a hostile, deeply
// nested document from costing quadratic time here.
const maxIndexDepth = 4

func indexKeys(data []byte) keyIndex {
	idx := keyIndex{}
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
				table = join(table, strings.ToLower(string(k.Data)))
				// A header refers to the last element of any array of
				// tables it goes through; an array-table header adds one.
				if n, ok := arrays[table]; ok && !(it.IsLast() && e.Kind == unstable.ArrayTable) {
					table = fmt.Sprintf("%s[%d]", table, n-1)
				}
			}
			if e.Kind == unstable.ArrayTable {
				n := arrays[table]
				arrays[table] = n + 1
				table = fmt.Sprintf("%s[%d]", table, n)
			}
			// Point at the opening bracket rather than the name.
			for start > 0 && (data[start-1] == '[' || data[start-1] == ' ' || data[start-1] == '\t') {
				start--
			}
			idx[table] = keyPos{off: start, content: -1}
		case unstable.KeyValue:
			idx.keyValue(data, table, e, 0)
		}
	}
	return idx
}

func join(table, key string) string {
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
		path = join(path, strings.ToLower(string(last.Data)))
		// Dotted keys define tables implicitly; remember where, so that a
		// key missing from such a table is reported next to it.
		if _, ok := idx[path]; !ok && !it.IsLast() {
			idx[path] = keyPos{off: int(last.Raw.Offset), content: -1}
		}
	}
	// Arrays carry no position of their own: find the value after "=".
	off := int(last.Raw.Offset + last.Raw.Length)
	for off < len(data) && strings.IndexByte(" \t=", data[off]) >= 0 {
		off++
	}
	idx.value(data, path, kv.Value(), off, depth)
}

func (idx keyIndex) value(data []byte, path string, v *unstable.Node, off, depth int) {
	pos := keyPos{off: off, content: -1}
	if v.Raw.Length > 0 {
		pos.off = int(v.Raw.Offset)
	}
	if v.Kind == unstable.String {
		pos.content = verbatim(data, v)
	}
	idx[path] = pos
	if depth >= maxIndexDepth {
		return
	}
	switch v.Kind {
	case unstable.InlineTable:
		for it := v.Children(); it.Next(); {
			idx.keyValue(data, path, it.Node(), depth+1)
		}
	case unstable.Array:
		i := 0
		for it := v.Children(); it.Next(); {
			if e := it.Node(); e.Kind != unstable.Comment {
				idx.value(data, fmt.Sprintf("%s[%d]", path, i), e, pos.off, depth+1)
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

// find returns the position of key, or of the nearest enclosing table that
// is in the document (offset -1 for none); found reports an exact match.
func (idx keyIndex) find(key string) (pos keyPos, found bool) {
	for k := key; k != ""; k = k[:max(strings.LastIndexAny(k, ".["), 0)] {
		if pos, ok := idx[k]; ok {
			return pos, k == key
		}
	}
	return keyPos{off: -1, content: -1}, false
}
