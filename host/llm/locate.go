package llm

import (
	"strings"

	"github.com/nexus-eval/nexus/internal/tomlpos"
	"github.com/nexus-eval/nexus/manifest"
)

// indexOpts suit a config of tables of scalars, reached through tables,
// dotted keys and inline tables: nothing is indexed by element.
var indexOpts = tomlpos.Options{MaxDepth: 3}

// locate positions validation problems at their key, or at the nearest
// enclosing table in the file. It parses the file a second time to learn
// where each key is, which only happens when something is wrong.
func locate(path string, data []byte, probs []problem) manifest.Diagnostics {
	keys := tomlpos.IndexKeys(data, indexOpts)
	lines := tomlpos.NewLines(data)
	ds := make(manifest.Diagnostics, 0, len(probs))
	for _, p := range probs {
		line, col := 1, 1
		if pos, _ := keys.Find(strings.ToLower(p.key)); pos.Off >= 0 {
			line, col = lines.Pos(pos.Off)
		}
		ds = append(ds, manifest.Diagnostic{Path: path, Line: line, Col: col, Message: p.msg})
	}
	return ds
}
