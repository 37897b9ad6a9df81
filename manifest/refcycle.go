package manifest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Keywords whose subschemas apply to the same instance: a loop through
// them (with $ref) never consumes input, so a validator would recurse
// forever. Loops through properties, items and the like are fine (a tree
// schema), because each step descends into the instance.
var (
	inPlaceOne  = []string{"not", "if", "then", "else"}
	inPlaceMany = []string{"allOf", "anyOf", "oneOf"}
	inPlaceMap  = []string{"dependentSchemas"}
	consumeOne  = []string{"additionalProperties", "items", "contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "additionalItems"}
	consumeMany = []string{"prefixItems"}
	consumeMap  = []string{"properties", "patternProperties"}
	holdMap     = []string{"$defs", "definitions"}
)

// CheckRefCycles reports a schema whose $ref and in-place applicators
// (allOf, anyOf, oneOf, not, if/then/else) loop back to themselves without
// descending into the instance, e.g. {"$ref": "#"}: validating anything
// against it never ends. Only local references ("#...") are followed.
func CheckRefCycles(schema []byte) error {
	var doc any
	if err := json.Unmarshal(schema, &doc); err != nil {
		return err
	}
	g := &refGraph{root: doc, nodes: map[string]any{}, state: map[string]int{}}
	g.collect("", doc)
	for path := range g.nodes {
		if cycle := g.visit(path, nil); cycle != nil {
			return fmt.Errorf("has a reference cycle that never descends into the instance (%s): validation would not terminate; reach the recursion through properties or items", strings.Join(cycle, " -> "))
		}
	}
	return nil
}

type refGraph struct {
	root  any
	nodes map[string]any // JSON pointer -> schema object
	state map[string]int // 1 on the DFS stack, 2 done
}

// collect records every subschema reachable by structure.
func (g *refGraph) collect(path string, node any) {
	obj, ok := node.(map[string]any)
	if !ok {
		return
	}
	if _, seen := g.nodes[path]; seen {
		return
	}
	g.nodes[path] = obj
	for _, k := range append(append([]string{}, inPlaceOne...), consumeOne...) {
		if sub, ok := obj[k]; ok {
			g.collect(path+"/"+k, sub)
		}
	}
	for _, k := range append(append([]string{}, inPlaceMany...), consumeMany...) {
		if arr, ok := obj[k].([]any); ok {
			for i, sub := range arr {
				g.collect(path+"/"+k+"/"+strconv.Itoa(i), sub)
			}
		}
	}
	for _, k := range append(append(append([]string{}, inPlaceMap...), consumeMap...), holdMap...) {
		if m, ok := obj[k].(map[string]any); ok {
			for name, sub := range m {
				g.collect(path+"/"+k+"/"+escapePointer(name), sub)
			}
		}
	}
}

// next lists the schemas applied to the same instance as the one at path.
func (g *refGraph) next(path string) []string {
	obj, _ := g.nodes[path].(map[string]any)
	var out []string
	for _, k := range []string{"$ref", "$dynamicRef"} {
		if ref, ok := obj[k].(string); ok && strings.HasPrefix(ref, "#") {
			target, _ := unescapeFragment(ref[1:])
			if _, ok := g.nodes[target]; ok {
				out = append(out, target)
			}
		}
	}
	for _, k := range inPlaceOne {
		if _, ok := obj[k].(map[string]any); ok {
			out = append(out, path+"/"+k)
		}
	}
	for _, k := range inPlaceMany {
		if arr, ok := obj[k].([]any); ok {
			for i := range arr {
				out = append(out, path+"/"+k+"/"+strconv.Itoa(i))
			}
		}
	}
	for _, k := range inPlaceMap {
		if m, ok := obj[k].(map[string]any); ok {
			for name := range m {
				out = append(out, path+"/"+k+"/"+escapePointer(name))
			}
		}
	}
	return out
}

// visit is a depth-first search over in-place edges; it returns the cycle
// found from path, if any.
func (g *refGraph) visit(path string, stack []string) []string {
	switch g.state[path] {
	case 2:
		return nil
	case 1:
		for i, p := range stack {
			if p == path {
				return append(pointers(stack[i:]), pointer(path))
			}
		}
	}
	g.state[path] = 1
	stack = append(stack, path)
	for _, n := range g.next(path) {
		if c := g.visit(n, stack); c != nil {
			return c
		}
	}
	g.state[path] = 2
	return nil
}

func pointer(p string) string { return "#" + p }

func pointers(ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = pointer(p)
	}
	return out
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// unescapeFragment turns a URI fragment JSON pointer into the form
// collect uses (percent-decoding is not needed for the names Nexus sees).
func unescapeFragment(f string) (string, bool) {
	return f, f == "" || strings.HasPrefix(f, "/")
}
