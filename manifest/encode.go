package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Encode renders m as a nexus.toml that people can read and edit: schema,
// then [plugin], then [[agent]], [[tool]] and [[task]] tables, with JSON
// schemas pretty-printed as multi-line strings. Parse reads back what Encode
// writes (schemas differ only in insignificant JSON whitespace).
func Encode(m *Manifest) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "schema = %d\n\n[plugin]\n", m.Schema)
	p := &m.Plugin
	writeString(&b, "name", p.Name)
	writeString(&b, "version", p.Version)
	writeString(&b, "description", p.Description)
	writeString(&b, "binary", p.Binary)
	b.WriteString("protocols = [")
	for i, n := range p.Protocols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(n))
	}
	b.WriteString("]\n")
	writeString(&b, "sha256", p.SHA256)
	writeGrants(&b, p.Grants)

	for _, k := range Kinds {
		for _, c := range m.Components(k) {
			fmt.Fprintf(&b, "\n[[%s]]\n", k)
			writeString(&b, "name", c.Name)
			writeString(&b, "description", c.Description)
			writeString(&b, "kind", c.Kind)
			writeString(&b, "task", c.Task)
			writeStrings(&b, "tags", c.Tags)
			writeSchema(&b, "input_schema", c.InputSchema)
			writeSchema(&b, "output_schema", c.OutputSchema)
		}
	}
	if !utf8.Valid(b.Bytes()) {
		return nil, errors.New("manifest has text that is not valid UTF-8")
	}
	return b.Bytes(), nil
}

// writeGrants writes [plugin.grants] when anything is granted.
func writeGrants(b *bytes.Buffer, g Grants) {
	if len(g.LLM)+len(g.Tools)+len(g.Env) == 0 && !g.State && !g.Network {
		return
	}
	b.WriteString("\n[plugin.grants]\n")
	writeStrings(b, "llm", g.LLM)
	writeStrings(b, "tools", g.Tools)
	if g.State {
		b.WriteString("state = true\n")
	}
	writeStrings(b, "env", g.Env)
	if g.Network {
		b.WriteString("network = true\n")
	}
}

// writeStrings writes key = ["a", "b"], leaving out empty lists.
func writeStrings(b *bytes.Buffer, key string, vals []string) {
	if len(vals) == 0 {
		return
	}
	b.WriteString(key + " = [")
	for i, v := range vals {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quote(v))
	}
	b.WriteString("]\n")
}

// writeString writes key = "value", leaving out empty optional values.
func writeString(b *bytes.Buffer, key, val string) {
	if val != "" {
		fmt.Fprintf(b, "%s = %s\n", key, quote(val))
	}
}

// writeSchema writes a JSON schema indented over several lines, as a
// literal string so that its quotes need no escaping.
func writeSchema(b *bytes.Buffer, key, schema string) {
	var pretty bytes.Buffer
	if json.Indent(&pretty, []byte(schema), "", "  ") == nil {
		schema = pretty.String()
	}
	if strings.Contains(schema, "\n") && literalOK(schema) {
		fmt.Fprintf(b, "%s = '''\n%s'''\n", key, schema)
		return
	}
	writeString(b, key, schema)
}

// literalOK reports whether s can be a multi-line literal string: no
// delimiter inside, no trailing quote to merge with it, and no control
// characters besides newline and tab.
func literalOK(s string) bool {
	if strings.Contains(s, "'''") || strings.HasSuffix(s, "'") {
		return false
	}
	for _, c := range []byte(s) {
		if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// quote writes s as a TOML basic string. Bytes are copied as they are, so
// that invalid UTF-8 reaches Encode's check instead of being replaced.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range []byte(s) {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
