// Package chat holds the chat-completion types that cross the plugin
// boundary as JSON: the host's LLM clients and the SDK both use them, so
// the two sides cannot drift apart.
package chat

import "encoding/json"

// Roles of a Message.
const (
	RoleSystem    = "system"
	RoleDeveloper = "developer"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Request is one chat completion request. Its JSON form is what crosses
// the plugin boundary.
type Request struct {
	Messages []Message `json:"messages"`
	// Tools the model may call; empty for a plain chat.
	Tools []ToolDef `json:"tools,omitempty"`
	// Temperature overrides the entry's temperature when set.
	Temperature *float64 `json:"temperature,omitempty"`
	// MaxTokens overrides the entry's max_tokens when positive.
	MaxTokens int `json:"max_tokens,omitempty"`
}

// Message is one chat message. Role is system, developer, user, assistant
// or tool. An assistant message may carry ToolCalls (and then often no
// Content); a tool message answers one of them and names it in ToolCallID.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// Name is the optional participant name of a system, developer or user
	// message.
	Name string `json:"name,omitempty"`
}

// ToolDef declares a function the model may call.
type ToolDef struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the arguments, a JSON object; empty
	// means no parameters.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// ToolCall is a call the model asks for. Arguments is the JSON the model
// wrote; when that is not valid JSON it holds the text as a JSON string, so
// an agent can tell the model what went wrong instead of failing.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Response is the model's answer.
type Response struct {
	Message Message `json:"message"`
	// FinishReason is the server's: "stop", "tool_calls", "length", ...
	FinishReason string `json:"finish_reason"`
	Usage        Usage  `json:"usage"`
}

// Usage is the token count the server reported (zero when it reported
// none).
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}
