package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/underpass-ai/axlr/agent/agenttest"
	"github.com/underpass-ai/axlr/workflows"
)

// BenchmarkThousandSessions runs 1,000 short sessions (a prompt, a
// local_read, an answer) per iteration through one axlrd, a child process,
// four at a time, and reports its resident memory when ready
// (MB/rss-before), its peak (MB/peak-rss, the kernel's VmHWM), at the end
// (MB/rss-after), and the files it holds open at the end (open-fds). Run it with -benchtime 1x.
func BenchmarkThousandSessions(b *testing.B) {
	const sessions, parallel = 1000, 4
	model := agenttest.NewServer(b, func(req agenttest.Request) agenttest.Reply {
		if toolResults(req) == 0 {
			return agenttest.Reply{ToolCalls: []agenttest.ToolCall{{ID: "r1", Name: "local_read", Arguments: `{"path":"small.txt"}`}}}
		}
		return agenttest.Reply{Text: "read it"}
	})
	e := newEnv(b, model.URL)
	e.writeSettings(`{"model": "bench-model", "provider": {"stream": false}}`)
	writeFile(b, e.workspace, "small.txt", "hello\n")
	d := e.spawn()
	c, err := client.Dial(client.Options{HostPort: e.address(), Logger: quiet{}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	pid := d.cmd.Process.Pid
	before := procStatusKB(b, pid, "VmRSS")
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		work := make(chan int)
		var wg sync.WaitGroup
		for range parallel {
			wg.Go(func() {
				for range work {
					runShortSession(b, c, e.workspace)
				}
			})
		}
		for i := range sessions {
			work <- i
		}
		close(work)
		wg.Wait()
	}
	b.StopTimer()
	b.ReportMetric(float64(before)/1024, "MB/rss-before")
	b.ReportMetric(float64(procStatusKB(b, pid, "VmHWM"))/1024, "MB/peak-rss")
	b.ReportMetric(float64(procStatusKB(b, pid, "VmRSS"))/1024, "MB/rss-after")
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(fds)), "open-fds")
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(sessions*b.N), "ms/session")
}

// runShortSession runs one execution of a new session to its result. It
// runs on its own goroutine, so it reports failures with Errorf.
func runShortSession(b *testing.B, c client.Client, root string) {
	ctx := context.Background()
	wid, eid, err := startSession(ctx, c, root, "read small.txt", "normal")
	if err != nil {
		b.Error(err)
		return
	}
	for {
		v, err := c.QueryWorkflow(ctx, wid, "", workflows.QueryProgress, workflows.ProgressQuery{ExecutionID: eid, After: 1 << 30})
		var p workflows.Progress
		if err == nil {
			err = v.Get(&p)
		}
		if err != nil {
			b.Errorf("progress of %s: %v", wid, err)
			return
		}
		if p.Result != nil {
			if p.Result.Answer != "read it" {
				b.Errorf("result %+v", p.Result)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// procStatusKB reads a "Name: N kB" line of /proc/<pid>/status.
func procStatusKB(b *testing.B, pid int, name string) int {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatalf("no %s in /proc/%d/status", name, pid)
	return 0
}
