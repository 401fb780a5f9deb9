package embedtemporal

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// reserveFor is how long a port handed out stays refused to every other
// caller on this machine: longer than any server takes to bind its ports.
const reserveFor = 3 * time.Minute

// reservations is the file, shared by every process of this user, that
// records the ports handed out and when. The server binds its ports seconds
// after they were chosen free; another server starting in between (tests
// start many at once, on 2 cores) would find the same ports free, and one of
// the two would fail to listen.
var reservations = filepath.Join(os.TempDir(), fmt.Sprintf("axlr-ports-%d", os.Getuid()))

// reserving serialises this process's callers; flock serialises processes.
var reserving sync.Mutex

// freePorts returns n distinct ports on 127.0.0.1 that are free now and
// reserved for this caller. The listeners are held until all are chosen.
// They are drawn from below the kernel's ephemeral range: a port from
// bind(0) can be taken in between as the source port of any outgoing
// connection, and the server would then fail to listen.
func freePorts(n int) ([]int, error) {
	var ports []int
	var err error
	withReservations(func(held map[int]time.Time) {
		ports, err = pickPorts(n, held)
		for _, p := range ports {
			held[p] = time.Now()
		}
	})
	return ports, err
}

func pickPorts(n int, held map[int]time.Time) ([]int, error) {
	lo, hi := unassignedRange()
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for tries := 0; len(ports) < n; tries++ {
		port := 0
		if tries < 64*n {
			port = lo + rand.IntN(hi-lo)
			if _, ok := held[port]; ok {
				continue
			}
		}
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			if port != 0 {
				continue
			}
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// reserve renews the reservation of ports a server is about to listen on,
// among them a frontend port the caller chose long before.
func reserve(ports ...int) {
	withReservations(func(held map[int]time.Time) {
		for _, p := range ports {
			if p != 0 {
				held[p] = time.Now()
			}
		}
	})
}

// withReservations calls f with the ports reserved in the last reserveFor,
// under a lock no other process holds, and records what f leaves. When the
// file cannot be used, f sees only this call's changes: ports are then
// chosen as free as the kernel says, which is how it worked before.
func withReservations(f func(held map[int]time.Time)) {
	reserving.Lock()
	defer reserving.Unlock()
	held := map[int]time.Time{}
	file, err := os.OpenFile(reservations, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		f(held)
		return
	}
	defer file.Close()
	if err := syscall.Flock(int(file.Fd()), syscall.LOCK_EX); err != nil {
		f(held)
		return
	}
	defer func() { _ = syscall.Flock(int(file.Fd()), syscall.LOCK_UN) }()
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		port, at, ok := strings.Cut(sc.Text(), " ")
		p, err1 := strconv.Atoi(port)
		sec, err2 := strconv.ParseInt(at, 10, 64)
		if ok && err1 == nil && err2 == nil {
			if t := time.Unix(sec, 0); time.Since(t) < reserveFor {
				held[p] = t
			}
		}
	}
	f(held)
	var b strings.Builder
	for p, t := range held {
		fmt.Fprintf(&b, "%d %d\n", p, t.Unix())
	}
	if err := file.Truncate(0); err != nil {
		return
	}
	_, _ = file.WriteAt([]byte(b.String()), 0)
}

// FreePort returns a port on 127.0.0.1 that is free now, outside the
// kernel's ephemeral range and reserved, for a server that listens on it
// shortly after.
func FreePort() (int, error) {
	ports, err := freePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// unassignedRange is a range of ports the kernel does not hand out as
// ephemeral ports: the 16,384 ports below Linux's ip_local_port_range, or
// 16384-32767 when that cannot be read.
func unassignedRange() (lo, hi int) {
	hi = 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 2048 {
				hi = n
			}
		}
	}
	return max(1024, hi-16384), hi
}

func checkPortFree(port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("in use (%w)", err)
	}
	return l.Close()
}
