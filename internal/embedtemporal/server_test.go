package embedtemporal

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"
	"go.temporal.io/server/common/log/tag"
)

func TestFatalPanicsWithTheMessage(t *testing.T) {
	var logs strings.Builder
	l := newTemporalLogger(zerolog.New(&logs), &atomic.Bool{})
	defer func() {
		var fatal *FatalError
		if err, _ := recover().(error); !errors.As(err, &fatal) {
			t.Fatalf("recovered %v, want a *FatalError", err)
		}
		if got := fatal.Error(); got != "temporal server: cannot go on key=v" {
			t.Errorf("error %q", got)
		}
		if !strings.Contains(logs.String(), `"level":"fatal"`) || !strings.Contains(logs.String(), "cannot go on") {
			t.Errorf("log %q", logs.String())
		}
	}()
	l.Fatal("cannot go on", tag.NewStringTag("key", "v"))
	t.Fatal("Fatal returned")
}

func TestFatalWhileStoppingOnlyLogs(t *testing.T) {
	var logs strings.Builder
	quiet := &atomic.Bool{}
	quiet.Store(true)
	newTemporalLogger(zerolog.New(&logs), quiet).Fatal("worker lost the frontend")
	if !strings.Contains(logs.String(), `"level":"error"`) {
		t.Errorf("log %q", logs.String())
	}
}

func TestFreePortsAreOutsideTheEphemeralRange(t *testing.T) {
	lo, hi := unassignedRange()
	ports, err := freePorts(8)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < lo || p >= hi || seen[p] {
			t.Errorf("port %d: want distinct ports in [%d, %d)", p, lo, hi)
		}
		seen[p] = true
	}
}

// A port the server cannot listen on is an error from Start, not the end of
// the process.
func TestListenFailureIsAnError(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	ports, err := freePorts(5)
	if err != nil {
		t.Fatal(err)
	}
	ports[2] = taken.Addr().(*net.TCPAddr).Port // history
	s, err := start(Options{Namespaces: []string{"default"}, Synchronous: "FULL"}, ports)
	if err == nil {
		s.Stop()
		t.Fatal("started with history's port taken")
	}
	want := "temporal server: Failed to start gRPC listener"
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), strconv.Itoa(ports[2])) {
		t.Fatalf("error %q, want %q naming port %d", err, want, ports[2])
	}
}
