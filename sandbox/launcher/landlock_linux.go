//go:build linux

package launcher

import (
	"errors"
	"syscall"
	"unsafe"
)

// The kernel's Landlock ABI (include/uapi/linux/landlock.h): the three
// system calls, numbered alike on every architecture Go builds for Linux.
const (
	sysCreateRuleset = 444
	sysAddRule       = 445
	sysRestrictSelf  = 446

	createRulesetVersion = 1 << 0
	rulePathBeneath      = 1
	ruleNetPort          = 2

	prSetNoNewPrivs = 38
	oPath           = 0x200000
)

// File system rights; the comment names the ABI that added a right.
const (
	fsExecute uint64 = 1 << iota
	fsWriteFile
	fsReadFile
	fsReadDir
	fsRemoveDir
	fsRemoveFile
	fsMakeChar
	fsMakeDir
	fsMakeReg
	fsMakeSock
	fsMakeFifo
	fsMakeBlock
	fsMakeSym
	fsRefer    // 2
	fsTruncate // 3
	fsIoctlDev // 5

	fsReadOnly = fsExecute | fsReadFile | fsReadDir
	// fsFileRights are those a rule on a file, not a directory, may hold.
	fsFileRights = fsExecute | fsWriteFile | fsReadFile | fsTruncate | fsIoctlDev
)

// Network rights (ABI 4) and scopes (ABI 6).
const (
	netBindTCP uint64 = 1 << iota
	netConnectTCP
)

const (
	scopeAbstractUnixSocket uint64 = 1 << iota
	scopeSignal
)

type rulesetAttr struct{ fs, net, scoped uint64 }

// pathBeneathAttr is the kernel's packed struct: its first 12 bytes.
type pathBeneathAttr struct {
	access uint64
	fd     int32
}

type netPortAttr struct{ access, port uint64 }

// devices are written by commands that only send output nowhere.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}

// ABI is the Landlock ABI version the kernel offers, or 0 with the
// kernel's reason.
func ABI() (int, error) {
	v, _, e := syscall.Syscall(sysCreateRuleset, 0, 0, createRulesetVersion)
	if e != 0 {
		return 0, errors.New("landlock_create_ruleset: " + e.Error())
	}
	return int(v), nil
}

// handled is what a ruleset on abi restricts: every right the ABI knows,
// so what no rule grants is denied.
func handled(abi int) rulesetAttr {
	a := rulesetAttr{fs: fsMakeSym<<1 - 1}
	if abi >= 2 {
		a.fs |= fsRefer
	}
	if abi >= 3 {
		a.fs |= fsTruncate
	}
	if abi >= 4 {
		a.net = netBindTCP | netConnectTCP
	}
	if abi >= 5 {
		a.fs |= fsIoctlDev
	}
	if abi >= 6 {
		// Nor may a command signal axlrd, or reach another program's
		// abstract unix socket.
		a.scoped = scopeAbstractUnixSocket | scopeSignal
	}
	return a
}

// restrict confines this thread, and what it execs, to r with the best
// ABI the kernel offers.
func restrict(r Rules) error {
	abi, err := ABI()
	if err != nil {
		return err
	}
	h := handled(abi)
	if r.OpenNetwork {
		h.net = 0
	}
	fd, _, e := syscall.Syscall(sysCreateRuleset, uintptr(unsafe.Pointer(&h)), unsafe.Sizeof(h), 0)
	if e != 0 {
		return errors.New("landlock_create_ruleset: " + e.Error())
	}
	defer syscall.Close(int(fd))
	for _, p := range r.Read {
		if err := addPath(int(fd), p, fsReadOnly&h.fs); err != nil {
			return err
		}
	}
	for _, p := range append(r.Write, devices...) {
		if err := addPath(int(fd), p, h.fs); err != nil {
			return err
		}
	}
	if h.net != 0 {
		// A command may listen on an ephemeral port (a test's server).
		if err := addPort(int(fd), netBindTCP, 0); err != nil {
			return err
		}
		for _, p := range r.Connect {
			if err := addPort(int(fd), netConnectTCP, p); err != nil {
				return err
			}
		}
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0); e != 0 {
		return errors.New("prctl(PR_SET_NO_NEW_PRIVS): " + e.Error())
	}
	if _, _, e := syscall.Syscall(sysRestrictSelf, fd, 0, 0); e != 0 {
		return errors.New("landlock_restrict_self: " + e.Error())
	}
	return nil
}

// addPath lets the ruleset grant access beneath path, or to it when it is
// a file; a path that does not exist grants nothing.
func addPath(ruleset int, path string, access uint64) error {
	fd, err := syscall.Open(path, oPath|syscall.O_CLOEXEC, 0)
	if err == syscall.ENOENT {
		return nil
	}
	if err != nil {
		return errors.New("open " + path + ": " + err.Error())
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return errors.New("stat " + path + ": " + err.Error())
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		access &= fsFileRights
	}
	attr := pathBeneathAttr{access: access, fd: int32(fd)}
	if _, _, e := syscall.Syscall6(sysAddRule, uintptr(ruleset), rulePathBeneath, uintptr(unsafe.Pointer(&attr)), 0, 0, 0); e != 0 {
		return errors.New("landlock_add_rule " + path + ": " + e.Error())
	}
	return nil
}

func addPort(ruleset int, access uint64, port uint16) error {
	attr := netPortAttr{access: access, port: uint64(port)}
	if _, _, e := syscall.Syscall6(sysAddRule, uintptr(ruleset), ruleNetPort, uintptr(unsafe.Pointer(&attr)), 0, 0, 0); e != 0 {
		return errors.New("landlock_add_rule port " + itoa(uint64(port)) + ": " + e.Error())
	}
	return nil
}
