package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one entry of a conversation, as stored in a transcript.
type Message struct {
	Role    string `json:"role"` // RoleSystem, RoleUser, RoleAssistant or RoleTool
	Content string `json:"content,omitempty"`
	// Reasoning is the assistant's reasoning text as the provider returned
	// it. It is kept for the record and never sent back.
	Reasoning string `json:"reasoning,omitempty"`
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID names the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ToolCall is a function call the model asked for.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON text exactly as the model produced it ("{}" when
	// the provider sent none).
	Arguments string `json:"arguments"`
}

// ToolSpec declares a function tool the model may call.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // a JSON Schema object; empty means no parameters
}

// toParamMessages converts a conversation to the wire form. Reasoning is
// dropped; an assistant message with tool calls and no content is sent
// without content.
func toParamMessages(msgs []Message) ([]openai.ChatCompletionMessageParamUnion, error) {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(msgs))
	for i, m := range msgs {
		switch m.Role {
		case RoleSystem:
			out = append(out, openai.SystemMessage(m.Content))
		case RoleUser:
			out = append(out, openai.UserMessage(m.Content))
		case RoleAssistant:
			out = append(out, assistantParam(m))
		case RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("message %d: tool message has no tool_call_id", i)
			}
			out = append(out, openai.ToolMessage(m.Content, m.ToolCallID))
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	return out, nil
}

func assistantParam(m Message) openai.ChatCompletionMessageParamUnion {
	var a openai.ChatCompletionAssistantMessageParam
	if m.Content != "" || len(m.ToolCalls) == 0 {
		a.Content.OfString = param.NewOpt(m.Content)
	}
	for _, tc := range m.ToolCalls {
		a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID: tc.ID,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
					Name:      tc.Name,
					Arguments: normalizeArguments(tc.Arguments),
				},
			},
		})
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}
}

// toParamTools converts tool specs to function tools. The schema's members
// are passed through as raw JSON, so nothing in them is reinterpreted.
func toParamTools(specs []ToolSpec) ([]openai.ChatCompletionToolUnionParam, error) {
	out := make([]openai.ChatCompletionToolUnionParam, 0, len(specs))
	for _, s := range specs {
		if s.Name == "" {
			return nil, errors.New("tool with an empty name")
		}
		def := shared.FunctionDefinitionParam{Name: s.Name}
		if s.Description != "" {
			def.Description = param.NewOpt(s.Description)
		}
		if len(s.Parameters) > 0 && string(s.Parameters) != "null" {
			var members map[string]json.RawMessage
			if err := json.Unmarshal(s.Parameters, &members); err != nil {
				return nil, fmt.Errorf("tool %q: parameters are not a JSON object: %w", s.Name, err)
			}
			def.Parameters = make(shared.FunctionParameters, len(members))
			for k, v := range members {
				def.Parameters[k] = v
			}
		}
		out = append(out, openai.ChatCompletionFunctionTool(def))
	}
	return out, nil
}

// normalizeArguments turns the empty arguments some servers send for a call
// without parameters into an empty object.
func normalizeArguments(args string) string {
	if args == "" {
		return "{}"
	}
	return args
}

// toolCallID returns id, or the deterministic "call_<index>" when the
// provider sent none.
func toolCallID(id string, index int) string {
	if id != "" {
		return id
	}
	return "call_" + strconv.Itoa(index)
}
