package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// MaxNameLen bounds plugin and component names, which appear in CLI flags,
// trace attributes and file names.
const MaxNameLen = 64

// problem is a semantic error found on the decoded struct. It names the
// offending key rather than a position, so that the valid path never pays
// for position bookkeeping; locate turns problems into diagnostics.
type problem struct {
	key      string // key path, e.g. "tool[1].name"; "" for the whole file
	severity Severity
	msg      string
	// missing replaces msg when key is absent from the file, so that
	// "missing" and "empty" get the right advice.
	missing string
	// firstKey is an earlier declaration whose line fills msg's %d.
	firstKey string
	// inValue, when inside is set, points into the string value (e.g. at a
	// JSON syntax error) rather than at its start.
	inValue int
	inside  bool
}

// ref names a key without formatting it, so that the valid path does not
// allocate: key and label are only built when there is a problem.
type ref struct {
	kind  Kind   // "" for keys outside components
	index int    // component index
	field string // the whole key when kind is ""
	name  string // component name, for labels
}

func (r ref) key() string {
	if r.kind == "" {
		return r.field
	}
	return fmt.Sprintf("%s[%d].%s", r.kind, r.index, r.field)
}

// component labels the component for messages: its name when usable,
// otherwise its position among its kind.
func (r ref) component() string {
	if validName(r.name) {
		return fmt.Sprintf("%s %q", r.kind, r.name)
	}
	return fmt.Sprintf("%s #%d", r.kind, r.index+1)
}

func (r ref) label() string {
	switch {
	case r.kind == "":
		return r.field
	case r.field == "name":
		return string(r.kind) + " name"
	}
	return r.field + " of " + r.component()
}

// example shows a valid setting of the key, for advice in messages.
func (r ref) example() string {
	switch r.field {
	case "name":
		return fmt.Sprintf("name = %q", "my-"+r.kind)
	case "plugin.name":
		return `name = "my-plugin"`
	case "plugin.version":
		return `version = "1.0.0"`
	case "plugin.binary":
		return `binary = "my-plugin"`
	case "plugin.protocols":
		return "protocols = [1]"
	}
	return r.field + ` = '{"type": "object"}'`
}

type validator struct{ probs []problem }

func (v *validator) add(p problem) { v.probs = append(v.probs, p) }

func (v *validator) errorf(r ref, format string, args ...any) {
	v.add(problem{key: r.key(), msg: fmt.Sprintf(format, args...)})
}

// required reports an empty required value and says whether it was set.
func (v *validator) required(r ref, set bool) bool {
	if !set {
		v.add(problem{
			key:     r.key(),
			msg:     fmt.Sprintf("%s is empty: set it, e.g. %s", r.label(), r.example()),
			missing: fmt.Sprintf("%s is missing: add it, e.g. %s", r.label(), r.example()),
		})
	}
	return set
}

// validate checks what the TOML decoder cannot: versions, names, paths and
// embedded JSON. It allocates nothing when the manifest is valid.
func (m *Manifest) validate() []problem {
	var v validator
	switch {
	case m.Schema == SchemaVersion:
	case m.Schema > SchemaVersion:
		v.errorf(ref{field: "schema"}, "schema = %d is newer than this host reads (schema %d): upgrade nexus-host",
			m.Schema, SchemaVersion)
	default:
		v.add(problem{
			key:     "schema",
			msg:     fmt.Sprintf("schema = %d is invalid: use schema = %d", m.Schema, SchemaVersion),
			missing: fmt.Sprintf("schema is missing: add schema = %d at the top of the file", SchemaVersion),
		})
	}

	p := &m.Plugin
	v.name(ref{field: "plugin.name"}, p.Name)
	v.required(ref{field: "plugin.version"}, p.Version != "")
	if v.required(ref{field: "plugin.binary"}, p.Binary != "") {
		v.binary(p.Binary)
	}
	v.required(ref{field: "plugin.protocols"}, len(p.Protocols) > 0)
	for i, n := range p.Protocols {
		if n < 1 {
			v.errorf(ref{field: fmt.Sprintf("plugin.protocols[%d]", i)},
				"plugin.protocols lists %d: protocol versions start at 1", n)
		}
	}
	if p.SHA256 != "" && !isSHA256(p.SHA256) {
		v.errorf(ref{field: "plugin.sha256"},
			"plugin.sha256 %q is invalid: use the 64 lower-case hex digits printed by sha256sum", p.SHA256)
	}

	v.grants(&p.Grants)
	for _, k := range Kinds {
		v.components(k, m.Components(k))
	}
	if len(m.Agents)+len(m.Tools)+len(m.Tasks) == 0 {
		v.add(problem{severity: Warning,
			msg: "manifest declares no agents, tools or tasks: add an [[agent]], [[tool]] or [[task]] table"})
	}
	return v.probs
}

// name checks a plugin or component name: names become CLI arguments,
// registry keys and span names, so they are kept to a portable alphabet.
func (v *validator) name(r ref, name string) {
	switch {
	case !v.required(r, name != ""):
	case len(name) > MaxNameLen:
		v.errorf(r, "%s is %d characters long: use at most %d", r.label(), len(name), MaxNameLen)
	case !validName(name):
		v.errorf(r, `%s %q is invalid: use lower-case letters, digits, "_" and "-", starting with a letter`,
			r.label(), name)
	}
}

// validName reports whether s matches ^[a-z][a-z0-9_-]*$.
func validName(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// binary keeps the binary inside the plugin directory: the manifest must not
// be able to make the host run an arbitrary program elsewhere.
func (v *validator) binary(bin string) {
	clean := filepath.Clean(bin)
	switch {
	case filepath.IsAbs(bin) || strings.HasPrefix(bin, "/"):
		v.errorf(ref{field: "plugin.binary"}, "plugin.binary %q is absolute: use a path relative to the plugin directory", bin)
	case clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)):
		v.errorf(ref{field: "plugin.binary"}, "plugin.binary %q escapes the plugin directory: put the binary inside it", bin)
	case clean == ".":
		v.errorf(ref{field: "plugin.binary"}, "plugin.binary %q is the plugin directory itself: name the executable", bin)
	}
}

// grants checks the names a plugin is granted, so a typo cannot silently
// grant nothing (or everything).
func (v *validator) grants(g *Grants) {
	for i, name := range g.LLM {
		if name != "*" && !validName(name) {
			v.errorf(ref{field: fmt.Sprintf("plugin.grants.llm[%d]", i)},
				`plugin.grants.llm lists %q: use an LLM name from the host config ([llm.NAME]) or "*"`, name)
		}
	}
	for i, name := range g.Tools {
		if !validToolPattern(name) {
			v.errorf(ref{field: fmt.Sprintf("plugin.grants.tools[%d]", i)},
				`plugin.grants.tools lists %q: use a tool name, "plugin/tool", "plugin/*" or "*"`, name)
		}
	}
	for i, name := range g.Env {
		if !validEnvName(name) {
			v.errorf(ref{field: fmt.Sprintf("plugin.grants.env[%d]", i)},
				"plugin.grants.env lists %q: use an environment variable name such as OPENAI_API_KEY", name)
		}
	}
}

func validToolPattern(s string) bool {
	if s == "*" {
		return true
	}
	plugin, tool, qualified := strings.Cut(s, "/")
	if !qualified {
		return validName(s)
	}
	return validName(plugin) && (tool == "*" || validName(tool))
}

func validEnvName(s string) bool {
	if s == "" || '0' <= s[0] && s[0] <= '9' {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func (v *validator) components(k Kind, cs []Component) {
	var first map[string]int // name -> index of its first declaration
	if len(cs) > 1 {
		first = make(map[string]int, len(cs))
	}
	for i := range cs {
		c := &cs[i]
		at := func(field string) ref { return ref{kind: k, index: i, field: field, name: c.Name} }

		v.name(at("name"), c.Name)
		// Only valid names are compared: an invalid one is reported anyway,
		// and cannot hold a "%" to upset msg's format.
		if j, dup := first[c.Name]; dup && validName(c.Name) {
			v.add(problem{key: at("name").key(), firstKey: ref{kind: k, index: j, field: "name"}.key(),
				msg: fmt.Sprintf("%s %q is declared twice (first at line %%d): give each %s a unique name", k, c.Name, k)})
		} else if first != nil {
			first[c.Name] = i
		}

		switch {
		case k != KindTool && c.Kind != "":
			v.errorf(at("kind"), "kind is only for tools: remove it from %s", at("kind").component())
		case k == KindTool && c.Kind != ToolLocal && c.Kind != ToolRuntime:
			v.errorf(at("kind"), "kind %q of %s is invalid: use %q or %q", c.Kind, at("kind").component(), ToolLocal, ToolRuntime)
		}
		if c.Task != TaskForbidden && c.Task != TaskOptional && c.Task != TaskRequired {
			v.errorf(at("task"), "task %q of %s is invalid: use %q, %q or %q",
				c.Task, at("task").component(), TaskForbidden, TaskOptional, TaskRequired)
		}
		v.jsonSchema(at("input_schema"), c.InputSchema)
		v.jsonSchema(at("output_schema"), c.OutputSchema)
	}
}

// jsonSchema does the cheap check run during discovery: the text is JSON and
// its top level can be a schema. CheckSchemas does the deep check.
func (v *validator) jsonSchema(r ref, text string) {
	if !v.required(r, text != "") {
		return
	}
	if !json.Valid([]byte(text)) {
		var raw json.RawMessage
		err := json.Unmarshal([]byte(text), &raw)
		p := problem{key: r.key(), msg: fmt.Sprintf("%s is not valid JSON: %v", r.label(), err)}
		if se := (*json.SyntaxError)(nil); errors.As(err, &se) {
			p.inValue, p.inside = min(max(int(se.Offset)-1, 0), len(text)-1), true
		}
		v.add(p)
		return
	}
	if t := jsonType(text); t != "object" && t != "boolean" {
		v.errorf(r, "%s must be a JSON object or boolean, not %s", r.label(), t)
	}
}

// jsonType names the type of a valid JSON document from its first byte.
func jsonType(text string) string {
	switch strings.TrimLeft(text, " \t\r\n")[0] {
	case '{':
		return "object"
	case 't', 'f':
		return "boolean"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 'n':
		return "null"
	}
	return "a number"
}
