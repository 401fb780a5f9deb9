package agent

import (
	"encoding/json"
	"testing"
)

func TestToParamMessagesWire(t *testing.T) {
	cases := []struct {
		name string
		msg  Message
		want string
	}{
		{
			name: "system",
			msg:  Message{Role: RoleSystem, Content: "rules"},
			want: `{"content":"rules","role":"system"}`,
		},
		{
			name: "user",
			msg:  Message{Role: RoleUser, Content: "hi"},
			want: `{"content":"hi","role":"user"}`,
		},
		{
			name: "assistant text and reasoning",
			msg:  Message{Role: RoleAssistant, Content: "done", Reasoning: "private"},
			want: `{"content":"done","role":"assistant"}`,
		},
		{
			name: "empty assistant keeps its content",
			msg:  Message{Role: RoleAssistant},
			want: `{"content":"","role":"assistant"}`,
		},
		{
			name: "assistant text and tool calls",
			msg: Message{Role: RoleAssistant, Content: "reading", ToolCalls: []ToolCall{
				{ID: "c1", Name: "read", Arguments: `{"path":"a"}`},
			}},
			want: `{"content":"reading","tool_calls":[{"id":"c1","function":{"arguments":"{\"path\":\"a\"}","name":"read"},"type":"function"}],"role":"assistant"}`,
		},
		{
			name: "assistant tool calls only",
			msg:  Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c2", Name: "list"}}},
			want: `{"tool_calls":[{"id":"c2","function":{"arguments":"{}","name":"list"},"type":"function"}],"role":"assistant"}`,
		},
		{
			name: "tool result",
			msg:  Message{Role: RoleTool, ToolCallID: "c2", Content: "a.go"},
			want: `{"content":"a.go","tool_call_id":"c2","role":"tool"}`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			params, err := toParamMessages([]Message{tc.msg})
			if err != nil {
				t.Fatalf("toParamMessages: %v", err)
			}
			got, err := json.Marshal(params[0])
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			if !sameJSON(t, got, []byte(tc.want)) {
				t.Errorf("wire form = %s, want %s", got, tc.want)
			}
		})
	}
}

// The schema is passed through member by member: nested objects keep their
// key order and numbers their spelling.
func TestToParamToolsKeepsSchemaText(t *testing.T) {
	schema := `{"type":"object","properties":{"z":{"type":"integer","maximum":1e3},"a":{"type":"string"}},"required":["z"]}`
	tools, err := toParamTools([]ToolSpec{{Name: "t", Description: "d", Parameters: json.RawMessage(schema)}})
	if err != nil {
		t.Fatalf("toParamTools: %v", err)
	}
	got, err := json.Marshal(tools[0])
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	want := `{"function":{"name":"t","description":"d","parameters":{"properties":{"z":{"type":"integer","maximum":1e3},"a":{"type":"string"}},"required":["z"],"type":"object"}},"type":"function"}`
	if !sameJSON(t, got, []byte(want)) {
		t.Errorf("tool = %s, want %s", got, want)
	}
	var decoded struct {
		Function struct {
			Parameters map[string]json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(got, &decoded); err != nil {
		t.Fatal(err)
	}
	if props := string(decoded.Function.Parameters["properties"]); props != `{"z":{"type":"integer","maximum":1e3},"a":{"type":"string"}}` {
		t.Errorf("properties sent as %s, want the original text", props)
	}
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("decode %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return js(x) == js(y)
}
