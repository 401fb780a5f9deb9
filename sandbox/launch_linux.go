package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// init is the launcher: a process started by Wrap restricts itself and
// execs the program before any other package's work matters. It never
// returns to the binary's own main.
func init() {
	if len(os.Args) < 5 || os.Args[1] != LauncherArg {
		return
	}
	if err := launch(os.Args[2], os.Args[3], os.Args[4:]); err != nil {
		fmt.Fprintf(os.Stderr, "axlr sandbox: %v\n", err)
		os.Exit(126)
	}
}

func kernelABI() (int, error) { return ll.LandlockGetABIVersion() }

// launch applies the rules to this process and execs path with argv.
func launch(spec, path string, argv []string) error {
	var r Rules
	if err := json.Unmarshal([]byte(spec), &r); err != nil {
		return fmt.Errorf("read the rules: %w", err)
	}
	if err := restrict(r); err != nil {
		return err
	}
	if err := syscall.Exec(path, argv, os.Environ()); err != nil {
		return fmt.Errorf("exec %s: %w", path, err)
	}
	return nil
}

// restrict applies rules with the newest ABI this package knows that the
// kernel offers (V5: files, truncation, device ioctl, TCP bind and
// connect), as far as the kernel goes.
func restrict(r Rules) error {
	abi, err := ABI()
	if err != nil || abi < 1 {
		return fmt.Errorf("the kernel offers no Landlock: %v", err)
	}
	write := landlock.RWDirs(r.Write...).IgnoreIfMissing()
	if abi >= 2 {
		// Renames and links across the writable directories (git,
		// the Go build cache) need refer, which ABI 1 lacks.
		write = write.WithRefer()
	}
	rules := []landlock.Rule{
		landlock.RODirs(r.Read...).IgnoreIfMissing(),
		write,
		// Output to /dev/null and friends is a write.
		landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full", "/dev/tty").IgnoreIfMissing(),
		// A command may listen on an ephemeral port (a test's server).
		landlock.BindTCP(0),
	}
	for _, p := range r.Connect {
		rules = append(rules, landlock.ConnectTCP(p))
	}
	if err := landlock.V5.BestEffort().Restrict(rules...); err != nil {
		return fmt.Errorf("restrict with Landlock: %w", err)
	}
	return nil
}
