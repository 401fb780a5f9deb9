package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/contract"
	"github.com/underpass-ai/axlr/workflows"
)

// stampedModel is an OpenAI-compatible server whose streamed answer is
// n chunks, gap apart, each the time it was sent ("<unix ns>|"), so a
// reader of the deltas knows how long each took to reach it.
func stampedModel(b *testing.B, n int, gap time.Duration) *httptest.Server {
	b.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		chunk := func(delta, finish string) {
			fin := "null"
			if finish != "" {
				fin = strconv.Quote(finish)
			}
			fmt.Fprintf(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", delta, fin)
			f.Flush()
		}
		chunk(`{"role":"assistant","content":""}`, "")
		for range n {
			time.Sleep(gap)
			chunk(fmt.Sprintf(`{"content":"%d|"}`, time.Now().UnixNano()), "")
		}
		chunk(`{}`, "stop")
		fmt.Fprint(w, "data: [DONE]\n\n")
		f.Flush()
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkDeltaLatency measures the time from the provider's token to
// the SSE client of the same axlrd: one streamed answer of b.N chunks,
// 5 ms apart, each stamped with when the provider sent it, read from the
// session's event stream as text.delta. It reports p50 and p99 in ms.
func BenchmarkDeltaLatency(b *testing.B) {
	model := stampedModel(b, b.N, 5*time.Millisecond)
	e := newEnv(b, model.URL+"/v1")
	e.writeSettings(serviceSettings(e.workspace, ""))
	d := e.start()
	a := localAPI(b, d.info.ServiceURL, e.stateDir)
	sid := a.do("POST", "/v1/sessions", map[string]any{}).must(b, 201).str("id")
	events := a.stream("/v1/sessions/"+sid+"/events", "")
	events.until(b, "stream.opened", 10*time.Second)
	b.ResetTimer()
	a.do("POST", "/v1/sessions/"+sid+"/turns", map[string]any{"prompt": "stream"}, "Idempotency-Key", "delta-latency-0001").must(b, 202)
	var took []time.Duration
	timeout := time.After(5 * time.Minute)
	for len(took) < b.N {
		select {
		case ev, ok := <-events.events:
			if !ok {
				b.Fatal("the stream ended")
			}
			if ev.typ != "text.delta" {
				continue
			}
			at := time.Now()
			var d contract.Event
			if err := json.Unmarshal(ev.data, &d); err != nil {
				b.Fatal(err)
			}
			for _, stamp := range strings.Split(strings.TrimSuffix(d.Text, "|"), "|") {
				ns, err := strconv.ParseInt(stamp, 10, 64)
				if err != nil {
					b.Fatalf("delta %q", d.Text)
				}
				took = append(took, at.Sub(time.Unix(0, ns)))
			}
		case <-timeout:
			b.Fatalf("%d of %d deltas in 5 minutes", len(took), b.N)
		}
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkEventStreams opens 500 event streams on one session of an
// axlrd running as its own process, runs a turn of b.N tool calls (each
// a local_read, so each a tool.requested and a tool.completed event),
// and waits until every stream got every durable event of it. It
// reports axlrd's resident memory with the streams open, its peak, and
// the CPU it spent from the first stream's opening to the last event.
func BenchmarkEventStreams(b *testing.B) {
	const streams = 500
	reads := b.N
	model := agenttest.NewServer(b, func(req agenttest.Request) agenttest.Reply {
		done := 0
		for _, m := range req.Messages {
			if m.Role == "tool" {
				done++
			}
		}
		if done < reads {
			return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: fmt.Sprintf("r%d", done), Name: "local_read", Arguments: `{"path":"a.txt"}`}}}
		}
		return agenttest.Reply{Text: "read it all"}
	})
	e := newEnv(b, model.URL)
	if err := os.WriteFile(e.workspace+"/a.txt", []byte("a\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	e.writeSettings(serviceSettings(e.workspace, ""))
	p := e.spawn()
	pid := p.cmd.Process.Pid
	a := localAPI(b, serviceURL(b, p), e.stateDir)
	a.http.Transport = &http.Transport{MaxIdleConnsPerHost: streams + 10}
	sid := a.do("POST", "/v1/sessions", map[string]any{}).must(b, 201).str("id")
	cpu0 := procCPU(b, pid)
	start := time.Now()
	var wg sync.WaitGroup
	counts := make([]int, streams)
	opened := make(chan struct{}, streams)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range streams {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, "GET", a.url+"/v1/sessions/"+sid+"/events?after=0", nil)
			req.Header.Set("Authorization", "Bearer "+a.token)
			resp, err := a.http.Do(req)
			if err != nil {
				b.Error(err)
				opened <- struct{}{}
				return
			}
			defer resp.Body.Close()
			opened <- struct{}{}
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				line := sc.Text()
				if strings.HasPrefix(line, "id: ") {
					counts[i]++
				}
				if line == "event: completed" {
					return
				}
			}
		})
	}
	for range streams {
		<-opened
	}
	rssOpen := procStatusKB(b, pid, "VmRSS")
	b.ResetTimer()
	a.do("POST", "/v1/sessions/"+sid+"/turns", map[string]any{"prompt": "read", "approval": "local"}, "Idempotency-Key", "event-streams-00001").must(b, 202)
	wg.Wait()
	b.StopTimer()
	took := time.Since(start)
	cpu := procCPU(b, pid) - cpu0
	want := counts[0]
	for i, n := range counts {
		if n != want || n < 2*reads+2 {
			b.Fatalf("stream %d got %d durable events; stream 0 got %d, and the turn made at least %d", i, n, want, 2*reads+2)
		}
	}
	b.ReportMetric(float64(rssOpen)/1024, "MB/rss-streams-open")
	b.ReportMetric(float64(procStatusKB(b, pid, "VmHWM"))/1024, "MB/peak-rss")
	b.ReportMetric(float64(cpu.Milliseconds()), "cpu-ms")
	b.Logf("%d streams got %d durable events each in %s; axlrd used %s of CPU", streams, want, took.Round(time.Millisecond), cpu)
}

// procCPU is a process's user and system time.
func procCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.Atoi(f[11])
	st, _ := strconv.Atoi(f[12])
	return time.Duration(ut+st) * time.Second / 100
}

// BenchmarkTurnOverhead measures what POST /v1/sessions/{id}/turns adds
// over the client call it makes (the session workflow's execute update):
// each iteration sends one turn through the API and one through the
// client, on two sessions, and waits for each to end before the next
// (untimed). It reports the p50 of each and their difference, in ms.
func BenchmarkTurnOverhead(b *testing.B) {
	model := agenttest.NewServer(b, func(agenttest.Request) agenttest.Reply { return agenttest.Reply{Text: "ok"} })
	e := newEnv(b, model.URL)
	e.writeSettings(serviceSettings(e.workspace, ""))
	d := e.start()
	a := localAPI(b, d.info.ServiceURL, e.stateDir)
	c := dialAxlrd(b, e)
	ctx := context.Background()
	viaAPI := a.do("POST", "/v1/sessions", map[string]any{}).must(b, 201).str("id")
	created := a.do("POST", "/v1/sessions", map[string]any{}).must(b, 201)
	viaClient, root := created.str("id"), created.str("root")
	idle := func(sid string) {
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
			if v, err := c.SessionView(ctx, sid); err == nil && v.State == workflows.SessionIdle && v.Result != nil {
				return
			}
			if time.Now().After(deadline) {
				b.Fatalf("session %s not idle after a minute", sid)
			}
		}
	}
	var api, direct []time.Duration
	i := 0
	for b.Loop() {
		i++
		start := time.Now()
		a.do("POST", "/v1/sessions/"+viaAPI+"/turns", map[string]any{"prompt": "hi"}, "Idempotency-Key", fmt.Sprintf("overhead-turn-%06d", i)).must(b, 202)
		api = append(api, time.Since(start))
		start = time.Now()
		if _, err := c.Execute(ctx, viaClient, workflows.ExecuteRequest{Prompt: "hi", Approval: "none", Root: root, ExecutionID: fmt.Sprintf("direct-%06d", i)}); err != nil {
			b.Fatal(err)
		}
		direct = append(direct, time.Since(start))
		b.StopTimer()
		idle(viaAPI)
		idle(viaClient)
		b.StartTimer()
	}
	slices.Sort(api)
	slices.Sort(direct)
	p50 := func(d []time.Duration) float64 { return float64(d[len(d)/2].Microseconds()) / 1000 }
	b.ReportMetric(p50(api), "api-p50-ms")
	b.ReportMetric(p50(direct), "client-p50-ms")
	b.ReportMetric(p50(api)-p50(direct), "added-p50-ms")
}
