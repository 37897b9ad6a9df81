package wire

import (
	pluginv1 "github.com/nexus-eval/nexus/internal/pb/nexus/plugin/v1"
	"github.com/nexus-eval/nexus/manifest"
)

var kindToProto = map[manifest.Kind]pluginv1.ComponentKind{
	manifest.KindTool:  pluginv1.ComponentKind_COMPONENT_KIND_TOOL,
	manifest.KindAgent: pluginv1.ComponentKind_COMPONENT_KIND_AGENT,
	manifest.KindTask:  pluginv1.ComponentKind_COMPONENT_KIND_TASK,
}

var toolKindToProto = map[string]pluginv1.ToolKind{
	manifest.ToolLocal:   pluginv1.ToolKind_TOOL_KIND_LOCAL,
	manifest.ToolRuntime: pluginv1.ToolKind_TOOL_KIND_RUNTIME,
}

var taskModeToProto = map[string]pluginv1.TaskMode{
	manifest.TaskForbidden: pluginv1.TaskMode_TASK_MODE_FORBIDDEN,
	manifest.TaskOptional:  pluginv1.TaskMode_TASK_MODE_OPTIONAL,
	manifest.TaskRequired:  pluginv1.TaskMode_TASK_MODE_REQUIRED,
}

// ComponentToProto converts a manifest entry of kind k for Describe.
func ComponentToProto(k manifest.Kind, c manifest.Component) *pluginv1.Component {
	return &pluginv1.Component{
		Kind:         kindToProto[k],
		Name:         c.Name,
		Description:  c.Description,
		Tags:         c.Tags,
		InputSchema:  []byte(c.InputSchema),
		OutputSchema: []byte(c.OutputSchema),
		ToolKind:     toolKindToProto[c.Kind],
		TaskMode:     taskModeToProto[c.Task],
	}
}

// ComponentFromProto converts a Describe entry back to its kind and manifest
// form. Unknown enum values map to "" so a comparison reports them.
func ComponentFromProto(p *pluginv1.Component) (manifest.Kind, manifest.Component) {
	return reverse(kindToProto, p.GetKind()), manifest.Component{
		Name:         p.GetName(),
		Description:  p.GetDescription(),
		Tags:         p.GetTags(),
		InputSchema:  string(p.GetInputSchema()),
		OutputSchema: string(p.GetOutputSchema()),
		Kind:         reverse(toolKindToProto, p.GetToolKind()),
		Task:         reverse(taskModeToProto, p.GetTaskMode()),
	}
}

func reverse[K comparable, V comparable](m map[K]V, v V) K {
	for k, mv := range m {
		if mv == v {
			return k
		}
	}
	var zero K
	return zero
}
