// Package manifest owns the nexus.toml schema: the types of a plugin
// manifest, strict parsing, validation with file:line:col diagnostics,
// encoding, and scanning plugin directories.
package manifest

// FileName is the name of a plugin manifest inside its plugin directory.
const FileName = "nexus.toml"

// SchemaVersion is the manifest schema this package reads and writes.
const SchemaVersion = 1

// Kind is the kind of a component.
type Kind string

const (
	KindTool  Kind = "tool"
	KindAgent Kind = "agent"
	KindTask  Kind = "task"
)

// Kinds lists every component kind in display order.
var Kinds = []Kind{KindAgent, KindTool, KindTask}

// Tool kinds: where a tool runs.
const (
	ToolLocal   = "local"
	ToolRuntime = "runtime"
)

// Task modes: whether a component may run as a background task.
const (
	TaskForbidden = "forbidden"
	TaskOptional  = "optional"
	TaskRequired  = "required"
)

// Manifest is one parsed nexus.toml.
type Manifest struct {
	Schema int         `toml:"schema"`
	Plugin Plugin      `toml:"plugin"`
	Tools  []Component `toml:"tool,omitempty"`
	Agents []Component `toml:"agent,omitempty"`
	Tasks  []Component `toml:"task,omitempty"`

	// Path is the manifest file the manifest was read from; empty when it
	// was built in memory.
	Path string `toml:"-"`
}

// Plugin describes the binary that serves the manifest's components.
type Plugin struct {
	Name        string `toml:"name"`
	Version     string `toml:"version"`
	Description string `toml:"description,omitempty"`
	// Binary is the executable's path relative to the manifest's directory.
	Binary string `toml:"binary"`
	// Protocols lists the wire-protocol versions the binary speaks.
	Protocols []int `toml:"protocols"`
	// SHA256 optionally pins the binary's content (lower-case hex).
	SHA256 string `toml:"sha256,omitempty"`
	// Grants lists what the plugin may reach through the host. Nothing is
	// granted by default.
	Grants Grants `toml:"grants,omitempty"`
}

// Grants is the least privilege a plugin runs with: every host service it
// may use, and everything of the host's it may see.
type Grants struct {
	// LLM lists the LLM clients (names from the host config) the plugin may
	// call; "*" allows all.
	LLM []string `toml:"llm,omitempty"`
	// Tools lists the tools the plugin may call through the host: short or
	// qualified names, "plugin/*" for every tool of a plugin, "*" for all.
	Tools []string `toml:"tools,omitempty"`
	// State allows reading and writing the execution's shared tool state.
	State bool `toml:"state,omitempty"`
	// Env lists host environment variables passed to the plugin process.
	// Everything else (secrets included) is withheld.
	Env []string `toml:"env,omitempty"`
	// Network lets the plugin's runtime reach the network.
	Network bool `toml:"network,omitempty"`
}

// Component is one [[tool]], [[agent]] or [[task]] entry.
type Component struct {
	Name        string   `toml:"name"`
	Description string   `toml:"description,omitempty"`
	Tags        []string `toml:"tags,omitempty"`
	// InputSchema and OutputSchema are JSON Schema documents written as
	// JSON text. For a task, the input is its arguments and the output is
	// what an agent must produce for one instance.
	InputSchema  string `toml:"input_schema"`
	OutputSchema string `toml:"output_schema"`
	// Kind is "local" or "runtime"; tools only, default "local".
	Kind string `toml:"kind,omitempty"`
	// Task is "forbidden", "optional" or "required"; default "forbidden".
	Task string `toml:"task,omitempty"`
}

// Components returns the manifest's components of kind k.
func (m *Manifest) Components(k Kind) []Component {
	switch k {
	case KindTool:
		return m.Tools
	case KindAgent:
		return m.Agents
	case KindTask:
		return m.Tasks
	}
	return nil
}
