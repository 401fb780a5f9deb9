package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/contract"
)

// TestStreamedEventsThroughACrash: a streamed response's reasoning and
// answer reach --json as reasoning and text lines, in the order they
// streamed and before completed. axlrd is killed while the second response
// streams; after the restart the watcher sees every line once: none of the
// first response's again, none of the lost attempt's.
func TestStreamedEventsThroughACrash(t *testing.T) {
	second := make(chan struct{})
	var mu sync.Mutex
	arrivals := map[int]int{}
	model := agenttest.NewServer(t, func(req agenttest.Request) agenttest.Reply {
		n := toolResults(req)
		mu.Lock()
		arrivals[n]++
		arrival := arrivals[n]
		mu.Unlock()
		if n == 0 {
			return agenttest.Reply{Reasoning: "The person wants a file.\nI will write it.\n", ChunkBytes: 5,
				ToolCalls: []agenttest.ToolCall{{ID: "w1", Name: "local_write", Arguments: `{"path":"a.txt","content":"one\n","mode":"create"}`}}}
		}
		if arrival == 1 {
			close(second)
			// Streams a little, then hangs: the daemon dies meanwhile.
			return agenttest.Reply{Reasoning: "lost attempt thinking\n", Text: "lost answer", ChunkBytes: 4, ChunkDelay: time.Minute}
		}
		return agenttest.Reply{Reasoning: "It is written.\n", Text: "a.txt holds\none line.", ChunkBytes: 3}
	})
	e := newEnv(t, model.URL)
	e.writeSettings(`{"model": "test-model"}`)
	d := e.spawn()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	done := make(chan cliResult, 1)
	go func() { done <- e.tui(ctx, "--exec", "write a.txt", "--approve", "local", "--json") }()
	select {
	case <-second:
	case r := <-done:
		t.Fatalf("exec ended before the second request: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	case <-time.After(2 * time.Minute):
		t.Fatalf("no second request; axlrd stderr:\n%s", d.stderr)
	}
	d.kill()
	d2 := e.spawn()
	var r cliResult
	select {
	case r = <-done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("no result after the restart; axlrd stderr:\n%s", d2.stderr)
	}
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	evs, res := lines(t, r.stdout)
	var got []string
	for _, ev := range evs {
		switch ev.Type {
		case contract.EventReasoning, contract.EventText, contract.EventToolRequested, contract.EventCompleted:
			got = append(got, string(ev.Type)+" "+ev.Text)
		}
	}
	want := []string{
		"reasoning The person wants a file.\n", "reasoning I will write it.\n", "tool.requested ",
		"reasoning It is written.\n", "text a.txt holds\n", "text one line.", "completed ",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("stream events\n%q\nwant\n%q", got, want)
	}
	if res.Answer != "a.txt holds\none line." {
		t.Fatalf("answer %q", res.Answer)
	}
}
