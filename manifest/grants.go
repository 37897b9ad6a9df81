package manifest

import (
	"slices"
	"strings"
)

// AllowsLLM reports whether the LLM client name is granted.
func (g Grants) AllowsLLM(name string) bool {
	return slices.Contains(g.LLM, "*") || slices.Contains(g.LLM, name)
}

// AllowsTool reports whether the tool (qualified as plugin/name) is
// granted.
func (g Grants) AllowsTool(plugin, name string) bool {
	for _, p := range g.Tools {
		switch {
		case p == "*", p == name, p == plugin+"/"+name, p == plugin+"/*":
			return true
		}
	}
	return false
}

// AllowsEnv reports whether the host variable is passed to the plugin.
func (g Grants) AllowsEnv(name string) bool { return slices.Contains(g.Env, name) }

// String lists the grants for messages, e.g. `llm=[default] state`.
func (g Grants) String() string {
	var parts []string
	if len(g.LLM) > 0 {
		parts = append(parts, "llm=["+strings.Join(g.LLM, ",")+"]")
	}
	if len(g.Tools) > 0 {
		parts = append(parts, "tools=["+strings.Join(g.Tools, ",")+"]")
	}
	if g.State {
		parts = append(parts, "state")
	}
	if len(g.Env) > 0 {
		parts = append(parts, "env=["+strings.Join(g.Env, ",")+"]")
	}
	if g.Network {
		parts = append(parts, "network")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}
