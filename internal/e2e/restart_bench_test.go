package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/underpass-ai/axlr/agent/agenttest"
)

// BenchmarkRestartToRetry kills axlrd (SIGKILL, a child process) while a
// model request is in flight, starts it again on the same state dir, and
// reports how long after the new axlrd is ready the request reaches the
// provider again (ms/ready-to-retry, the mean; max-ms/ready-to-retry), and
// how long the restart itself took (ms/kill-to-ready). Run it with a small
// -benchtime, e.g. 5x: each iteration is a kill and a restart.
func BenchmarkRestartToRetry(b *testing.B) {
	var mu sync.Mutex
	arrivals := map[string][]time.Time{}
	first := make(chan string, 1)
	model := agenttest.NewServer(b, func(req agenttest.Request) agenttest.Reply {
		prompt := ""
		for _, m := range req.Messages {
			if m.Role == "user" && strings.HasPrefix(m.Content, "restart ") {
				prompt = m.Content
			}
		}
		mu.Lock()
		arrivals[prompt] = append(arrivals[prompt], time.Now())
		n := len(arrivals[prompt])
		mu.Unlock()
		if n == 1 {
			first <- prompt
			return agenttest.Reply{Delay: 10 * time.Minute, Text: "too late"}
		}
		return agenttest.Reply{Text: "answered after the restart"}
	})
	e := newEnv(b, model.URL)
	e.writeSettings(`{"model": "bench-model", "provider": {"stream": false}}`)
	d := e.spawn()
	c, err := client.Dial(client.Options{HostPort: e.address(), Logger: quiet{}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	var toRetry, toReady []time.Duration
	b.ResetTimer()
	for i := range b.N {
		prompt := fmt.Sprintf("restart %d", i)
		wid, eid, err := startSession(ctx, c, e.workspace, prompt, "normal")
		if err != nil {
			b.Fatal(err)
		}
		select {
		case <-first:
		case <-time.After(time.Minute):
			b.Fatalf("the request never arrived; axlrd:\n%s", d.stderr)
		}
		killed := time.Now()
		d.kill()
		d = e.spawn()
		ready := time.Now()
		if r := waitResult(b, c, wid, eid); r.Answer != "answered after the restart" {
			b.Fatalf("result %+v", r)
		}
		mu.Lock()
		retried := arrivals[prompt][1]
		mu.Unlock()
		toReady = append(toReady, ready.Sub(killed))
		toRetry = append(toRetry, retried.Sub(ready))
	}
	b.StopTimer()
	b.ReportMetric(meanMS(toRetry), "ms/ready-to-retry")
	b.ReportMetric(float64(slices.Max(toRetry).Microseconds())/1000, "max-ms/ready-to-retry")
	b.ReportMetric(meanMS(toReady), "ms/kill-to-ready")
}

func meanMS(ds []time.Duration) float64 {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return float64(sum.Microseconds()) / 1000 / float64(len(ds))
}
