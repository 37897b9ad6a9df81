package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	toml "github.com/pelletier/go-toml/v2"

	"github.com/nexus-eval/nexus/internal/tomlpos"
)

// MaxSize is the largest manifest accepted. Manifests are a few KiB; the cap
// keeps a stray or hostile file from stalling discovery.
const MaxSize = 1 << 20

// Parse decodes and validates one manifest. path is used only in
// diagnostics. The manifest is nil exactly when the diagnostics hold an
// error; warnings come back with a usable manifest.
//
// Parsing is strict: unknown keys are errors, so typos never silently
// disable a setting. The common case (a valid manifest) decodes once and
// does no position bookkeeping; positions are recovered only when there is
// something to report.
func Parse(path string, data []byte) (*Manifest, Diagnostics) {
	if len(data) > MaxSize {
		return nil, Diagnostics{{Path: path, Line: 1, Col: 1, Message: tooLarge(int64(len(data)))}}
	}
	if !utf8.Valid(data) {
		line, col := tomlpos.NewLines(data).Pos(invalidUTF8(data))
		return nil, Diagnostics{{Path: path, Line: line, Col: col,
			Message: "file is not valid UTF-8: save it as UTF-8"}}
	}

	m := new(Manifest)
	var ds Diagnostics
	err := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields().Decode(m)
	// StrictMissingError wraps DecodeErrors, so it must be tested first.
	var strict *toml.StrictMissingError
	var decode *toml.DecodeError
	switch {
	case err == nil:
	case errors.As(err, &strict):
		// Unknown keys do not stop decoding: report them and still validate
		// the rest, so one run shows every problem.
		for i := range strict.Errors {
			ds = append(ds, unknownKey(path, &strict.Errors[i]))
		}
	case errors.As(err, &decode):
		return nil, Diagnostics{decodeDiag(path, decode)}
	default:
		return nil, Diagnostics{{Path: path, Line: 1, Col: 1, Message: strings.TrimPrefix(err.Error(), "toml: ")}}
	}

	m.applyDefaults()
	if probs := m.validate(); len(probs) > 0 {
		ds = append(ds, locate(path, data, probs)...)
	}
	ds.Sort()
	if ds.HasErrors() {
		return nil, ds
	}
	return m, ds
}

// applyDefaults fills the optional keys so that consumers never need to know
// the defaults.
func (m *Manifest) applyDefaults() {
	for i := range m.Tools {
		if m.Tools[i].Kind == "" {
			m.Tools[i].Kind = ToolLocal
		}
	}
	for _, cs := range [][]Component{m.Agents, m.Tools, m.Tasks} {
		for i := range cs {
			if cs[i].Task == "" {
				cs[i].Task = TaskForbidden
			}
		}
	}
}

// knownKeys lists the keys each table accepts, to suggest the right one when
// a key is unknown. Top-level keys are left out: the decoder reports keys
// inside inline tables without their table, so a one-part key may not be
// top-level.
var knownKeys = map[string]string{
	"plugin":    "name, version, description, binary, protocols, sha256",
	"component": "name, description, tags, input_schema, output_schema, kind, task",
}

func unknownKey(path string, e *toml.DecodeError) Diagnostic {
	line, col := e.Position()
	key := e.Key()
	msg := fmt.Sprintf("unknown key %q: remove it or check its spelling", strings.Join(key, "."))
	if known, ok := knownKeys[tableOf(key)]; ok {
		msg += "; known keys here: " + known
	}
	return Diagnostic{Path: path, Line: line, Col: col, Message: msg}
}

// tableOf names the table holding the last part of key, as used by
// knownKeys and expectedTypes; "?" when it is not one of ours. Like the
// decoder, it ignores case.
func tableOf(key []string) string {
	if len(key) == 1 {
		return ""
	}
	if len(key) == 2 {
		switch strings.ToLower(key[0]) {
		case "plugin":
			return "plugin"
		case "agent", "tool", "task":
			return "component"
		}
	}
	return "?"
}

// expectedTypes describes the TOML type of each key, keyed by table and key,
// because the decoder's own message names Go types the author never sees.
var expectedTypes = map[string]string{
	".schema":                 "an integer, e.g. schema = 1",
	".plugin":                 "a table: [plugin]",
	".agent":                  "an array of tables: [[agent]]",
	".tool":                   "an array of tables: [[tool]]",
	".task":                   "an array of tables: [[task]]",
	"plugin.name":             "a string",
	"plugin.version":          "a string",
	"plugin.description":      "a string",
	"plugin.binary":           "a string",
	"plugin.protocols":        "an array of integers, e.g. protocols = [1]",
	"plugin.sha256":           "a string",
	"component.name":          "a string",
	"component.description":   "a string",
	"component.tags":          "an array of strings",
	"component.input_schema":  "a string holding JSON",
	"component.output_schema": "a string holding JSON",
	"component.kind":          "a string",
	"component.task":          "a string",
}

func decodeDiag(path string, e *toml.DecodeError) Diagnostic {
	line, col := e.Position()
	msg := "invalid TOML: " + strings.TrimPrefix(e.Error(), "toml: ")
	if strings.HasPrefix(msg, "invalid TOML: cannot decode") || strings.HasPrefix(msg, "invalid TOML: cannot store") {
		// Name the innermost key of ours: with `schema.x = 1`, the problem
		// is that schema is not an integer.
		key := e.Key()
		for n := len(key); n > 0; n-- {
			if want, ok := expectedTypes[tableOf(key[:n])+"."+strings.ToLower(key[n-1])]; ok {
				msg = fmt.Sprintf("%s has the wrong type: it must be %s", strings.Join(key[:n], "."), want)
				break
			}
		}
	}
	return Diagnostic{Path: path, Line: line, Col: col, Message: msg}
}

// invalidUTF8 returns the offset of the first byte that is not valid UTF-8.
func invalidUTF8(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(data)
}
