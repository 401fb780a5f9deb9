//go:build !linux

package launcher

import "errors"

var errNotLinux = errors.New("Landlock is Linux's")

// ABI is the Landlock ABI version the kernel offers: none off Linux.
func ABI() (int, error) { return 0, errNotLinux }

func restrict(Rules) error { return errNotLinux }
