package embedtemporal

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// A warning about what axlrd leaves out on purpose is a debug line.
func TestWarningByDesignIsDebug(t *testing.T) {
	var logs strings.Builder
	l := newTemporalLogger(zerolog.New(&logs).Level(zerolog.InfoLevel), &atomic.Bool{})
	l.Warn("HTTP API port has not been set. Nexus HTTP endpoints will not be available.")
	if logs.Len() != 0 {
		t.Errorf("logged at info: %s", logs.String())
	}
	l.Warn("something else")
	if !strings.Contains(logs.String(), `"level":"warn"`) {
		t.Errorf("another warning was not logged: %q", logs.String())
	}
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
	ports, err := freePorts(4)
	if err != nil {
		t.Fatal(err)
	}
	ports[3] = taken.Addr().(*net.TCPAddr).Port // the worker service
	s, err := start(Options{Namespaces: []string{"default"}, Synchronous: "FULL"}, ports)
	if err == nil {
		s.Stop()
		t.Fatal("started with the worker service's port taken")
	}
	want := "temporal server: Failed to start gRPC listener"
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), strconv.Itoa(ports[3])) {
		t.Fatalf("error %q, want %q naming port %d", err, want, ports[3])
	}
}

// A port taken between its choice and the server's listen costs an
// attempt, not the start: Start chooses again, on the frontend port the
// caller named.
func TestStartChoosesAgainWhenAPortWasTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	frontend, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	choices := 0
	choosePorts = func(n int) ([]int, error) {
		choices++
		ports, err := freePorts(n)
		if choices == 1 && err == nil {
			ports[2] = taken.Addr().(*net.TCPAddr).Port // matching
		}
		return ports, err
	}
	t.Cleanup(func() { choosePorts = freePorts })
	logs := &lockedLog{}
	s, err := Start(Options{FrontendPort: frontend, Logger: zerolog.New(logs)})
	if err != nil {
		t.Fatalf("start: %v\n%s", err, logs.String())
	}
	defer s.Stop()
	if choices != 2 || !strings.Contains(logs.String(), "choosing again") {
		t.Fatalf("%d choices; log:\n%s", choices, logs.String())
	}
	if s.FrontendAddress() != net.JoinHostPort(host, strconv.Itoa(frontend)) {
		t.Fatalf("frontend %s, want port %d", s.FrontendAddress(), frontend)
	}
}

// Ports handed out are recorded for every process on the machine, stale
// records are dropped, and a recorded port is not handed out again.
func TestFreePortsAreReserved(t *testing.T) {
	shared := reservations
	t.Cleanup(func() { reservations = shared })
	reservations = filepath.Join(t.TempDir(), "ports")
	stale := time.Now().Add(-2 * reserveFor).Unix()
	if err := os.WriteFile(reservations, []byte(fmt.Sprintf("1234 %d\n", stale)), 0o600); err != nil {
		t.Fatal(err)
	}
	ports, err := freePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	withReservations(func(held map[int]time.Time) {
		for _, p := range ports {
			if _, ok := held[p]; !ok {
				t.Errorf("port %d not recorded: %v", p, held)
			}
		}
		if _, ok := held[1234]; ok {
			t.Errorf("stale record kept: %v", held)
		}
	})
	lo, hi := unassignedRange()
	held := map[int]time.Time{}
	for p := lo; p < hi; p++ {
		held[p] = time.Now()
	}
	got, err := pickPorts(1, held)
	if err != nil {
		t.Fatal(err)
	}
	if got[0] >= lo && got[0] < hi {
		t.Errorf("port %d handed out while every port in [%d, %d) was reserved", got[0], lo, hi)
	}
}

// lockedLog is a log the server's goroutines write to while the test reads.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
