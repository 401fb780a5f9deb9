// Package launcher is the sandbox's launcher: a process started with Arg
// as argv[1] restricts itself with Landlock in this package's init and
// execs the program it was given, which inherits the restriction.
//
// It is the first package of the binary to run its init that can: it
// imports only os, syscall and runtime, none of which needs reflect, so by
// Go's initialization order (packages sorted by path, each once its
// imports are done) it runs before the hundreds of packages a daemon
// links, and the launch costs little more than the exec itself. The
// Landlock calls are the kernel's ABI, made with syscall directly, for the
// same reason: go-landlock and golang.org/x/sys/unix import reflect
// (through encoding/binary) and psx, whose paths sort after most of a
// daemon's dependencies and would hold the launcher behind their inits.
package launcher

import (
	"errors"
	"os"
	"runtime"
	"syscall"
)

// Arg is argv[1] of a launcher process.
const Arg = "__axlr_sandbox"

// Rules are what a confined command may reach: the paths it may read (and
// execute from), those it may also write, and the TCP ports it may
// connect to (on ABI 4 and later; none by default), unless OpenNetwork
// leaves TCP unrestricted.
type Rules struct {
	Read        []string `json:"read,omitempty"`
	Write       []string `json:"write,omitempty"`
	Connect     []uint16 `json:"connect,omitempty"`
	OpenNetwork bool     `json:"open_network,omitempty"`
}

// Args is the launcher's argv (after the executable) that runs the
// program at path with argv under rules.
func Args(rules Rules, path string, argv []string) []string {
	args := []string{Arg}
	for _, p := range rules.Read {
		args = append(args, "r="+p)
	}
	for _, p := range rules.Write {
		args = append(args, "w="+p)
	}
	for _, port := range rules.Connect {
		args = append(args, "c="+itoa(uint64(port)))
	}
	if rules.OpenNetwork {
		args = append(args, "n=open")
	}
	return append(append(args, "--", path), argv...)
}

// init is the launcher. It never returns to the binary's own main.
func init() {
	if len(os.Args) < 2 || os.Args[1] != Arg {
		return
	}
	// Landlock and no_new_privs hold for the thread that asks, and exec
	// keeps that thread's: the init runs on the main thread, kept here.
	runtime.LockOSThread()
	if err := launch(os.Args[2:]); err != nil {
		os.Stderr.WriteString("axlr sandbox: " + err.Error() + "\n")
		os.Exit(126)
	}
}

// launch applies the rules in args and execs their program.
func launch(args []string) error {
	r, path, argv, err := parse(args)
	if err != nil {
		return err
	}
	if err := restrict(r); err != nil {
		return err
	}
	if err := syscall.Exec(path, argv, os.Environ()); err != nil {
		return errors.New("exec " + path + ": " + err.Error())
	}
	return nil
}

// parse reads what Args wrote.
func parse(args []string) (r Rules, path string, argv []string, err error) {
	for i, a := range args {
		if a == "--" {
			if len(args) < i+3 {
				return r, "", nil, errors.New("no program to run after --")
			}
			return r, args[i+1], args[i+2:], nil
		}
		if len(a) < 2 || a[1] != '=' {
			return r, "", nil, errors.New("unknown launcher argument " + a)
		}
		switch v := a[2:]; a[0] {
		case 'r':
			r.Read = append(r.Read, v)
		case 'w':
			r.Write = append(r.Write, v)
		case 'n':
			if v != "open" {
				return r, "", nil, errors.New("unknown launcher argument " + a)
			}
			r.OpenNetwork = true
		case 'c':
			port, ok := atoport(v)
			if !ok {
				return r, "", nil, errors.New("bad port " + v)
			}
			r.Connect = append(r.Connect, port)
		default:
			return r, "", nil, errors.New("unknown launcher argument " + a)
		}
	}
	return r, "", nil, errors.New("no -- before the program")
}

func itoa(n uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		if n /= 10; n == 0 {
			return string(b[i:])
		}
	}
}

func atoport(s string) (uint16, bool) {
	if s == "" || len(s) > 5 {
		return 0, false
	}
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return uint16(n), n <= 65535
}
