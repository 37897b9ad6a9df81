package validate

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// The validator reports the schema path it failed at ("validating
// /properties/a/items: required: ..."); explain turns that into the
// instance's JSON pointer, the keyword and the offending value.
var (
	validatingRE = regexp.MustCompile(`validating (\S+): `)
	additionalRE = regexp.MustCompile(`^unexpected additional properties \["([^"]*)"`)
)

func explain(rs *jsonschema.Resolved, inst any, err error) *Error {
	msg := err.Error()
	schemaPath := ""
	reason := msg
	if ms := validatingRE.FindAllStringSubmatchIndex(msg, -1); len(ms) > 0 {
		last := ms[len(ms)-1]
		schemaPath = msg[last[2]:last[3]]
		reason = msg[last[1]:]
	}
	keyword, _, _ := strings.Cut(reason, ":")
	if strings.ContainsAny(keyword, " []") {
		keyword = ""
	}
	pointer, value := walk(rs.Schema(), inst, schemaPath)
	if m := additionalRE.FindStringSubmatch(reason); m != nil {
		keyword = "additionalProperties"
		pointer += "/" + escape(m[1])
		if obj, ok := value.(map[string]any); ok {
			value = obj[m[1]]
		}
	}
	return &Error{Pointer: pointer, Keyword: keyword, Value: shorten(value), Reason: cutText(reason, reasonLimit)}
}

// walk follows schemaPath (a JSON pointer into the schema) through inst
// and returns the instance pointer and value it reaches.
func walk(s *jsonschema.Schema, inst any, schemaPath string) (string, any) {
	if schemaPath == "root" || schemaPath == "" {
		return "", inst
	}
	segs := strings.Split(strings.TrimPrefix(schemaPath, "/"), "/")
	var ptr strings.Builder
	for i := 0; i < len(segs) && s != nil; i++ {
		switch segs[i] {
		case "properties":
			if i+1 >= len(segs) {
				return ptr.String(), inst
			}
			name := unescape(segs[i+1])
			i++
			obj, ok := inst.(map[string]any)
			if !ok {
				return ptr.String(), inst
			}
			ptr.WriteString("/" + escape(name))
			inst, s = obj[name], s.Properties[name]
		case "items":
			arr, ok := inst.([]any)
			if !ok || s.Items == nil {
				return ptr.String(), inst
			}
			idx := firstFailing(s.Items, arr, len(s.PrefixItems))
			if idx < 0 {
				return ptr.String(), inst
			}
			ptr.WriteString("/" + strconv.Itoa(idx))
			inst, s = arr[idx], s.Items
		case "prefixItems":
			if i+1 >= len(segs) {
				return ptr.String(), inst
			}
			n, err := strconv.Atoi(segs[i+1])
			i++
			arr, ok := inst.([]any)
			if err != nil || !ok || n >= len(arr) || n >= len(s.PrefixItems) {
				return ptr.String(), inst
			}
			ptr.WriteString("/" + strconv.Itoa(n))
			inst, s = arr[n], s.PrefixItems[n]
		default:
			// allOf/anyOf/$defs and friends do not move in the instance.
			return ptr.String(), inst
		}
	}
	return ptr.String(), inst
}

// firstFailing returns the index of the first element (from start) that
// the items schema rejects, or -1 when it cannot tell (a schema with
// references does not resolve on its own).
func firstFailing(items *jsonschema.Schema, arr []any, start int) int {
	rs, err := items.CloneSchemas().Resolve(nil)
	if err != nil {
		return -1
	}
	for i := start; i < len(arr); i++ {
		if rs.Validate(arr[i]) != nil {
			return i
		}
	}
	return -1
}

func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func unescape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// Limits on what an error quotes from a document: the validator's reason
// repeats the offending value, so it is cut too.
const (
	valueLimit  = 80
	reasonLimit = 200
)

// shorten renders v as JSON of at most valueLimit bytes.
func shorten(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return cutText(string(b), valueLimit)
}

// cutText returns s if it fits in limit bytes, or else its longest prefix
// that, followed by "…", fits, never splitting a UTF-8 sequence.
func cutText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	const ellipsis = "…"
	n := limit - len(ellipsis)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + ellipsis
}
