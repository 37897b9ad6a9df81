package manifest

import (
	"fmt"

	"github.com/nexus-eval/nexus/internal/tomlpos"
)

// indexOpts index components by element ("tool[1].name"); the schema needs
// three levels of nesting below a key, and one more costs little.
var indexOpts = tomlpos.Options{MaxDepth: 4, Elements: true}

// locate turns problems into positioned diagnostics. It parses the document
// a second time to learn where each key is, which costs far more than the
// decode itself, so it runs only when there is something to report.
func locate(path string, data []byte, probs []problem) Diagnostics {
	keys := tomlpos.IndexKeys(data, indexOpts)
	lines := tomlpos.NewLines(data)
	ds := make(Diagnostics, 0, len(probs))
	for _, p := range probs {
		pos, found := keys.Find(p.key)
		msg := p.msg
		if !found && p.missing != "" {
			msg = p.missing
		}
		if p.firstKey != "" {
			first, _ := keys.Find(p.firstKey)
			line, _ := lines.Pos(max(first.Off, 0))
			msg = fmt.Sprintf(msg, line)
		}
		off := pos.Off
		if found && p.inside && pos.Content >= 0 {
			off = pos.Content + p.inValue
		}
		line, col := 1, 1
		if off >= 0 {
			line, col = lines.Pos(off)
		}
		ds = append(ds, Diagnostic{Path: path, Line: line, Col: col, Severity: p.severity, Message: msg})
	}
	return ds
}
