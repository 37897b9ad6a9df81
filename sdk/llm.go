package sdk

import "github.com/nexus-eval/nexus/internal/chat"

// The chat types of the host's LLM API (see [LLM.Chat]); they cross the
// plugin boundary as JSON.
type (
	// ChatRequest is one chat completion request.
	ChatRequest = chat.Request
	// Message is one chat message. An assistant message may carry
	// ToolCalls; a tool message answers one of them, naming it in
	// ToolCallID.
	Message = chat.Message
	// ToolDef declares a function the model may call; Parameters is a JSON
	// Schema.
	ToolDef = chat.ToolDef
	// ToolCall is a call the model asks for.
	ToolCall = chat.ToolCall
	// ChatResponse is the model's answer.
	ChatResponse = chat.Response
	// Usage is the token count of one completion.
	Usage = chat.Usage
)

// Roles of a chat Message.
const (
	RoleSystem    = chat.RoleSystem
	RoleUser      = chat.RoleUser
	RoleAssistant = chat.RoleAssistant
	RoleTool      = chat.RoleTool
)
